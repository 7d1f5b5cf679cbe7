"""The collective-op table (lowering/analysis/collective_ops.py) against the PTX CuTeDSL emits.

The table says, per IR op (and per copy/MMA atom), which PTX instruction it becomes;
a scope is only as right as that. Here real kernels are traced and compiled (no GPU
needed) and every op the table matches in the IR must show its instruction in the
PTX; the per-thread ops the table leaves out (mbarrier, tcgen05.commit, TMA store)
must not be matched. Kernels: the correct cases of tests/collective_kernels.py, one
per family of collectives, and a few one-call kernels for what the corpus lacks.
"""

from __future__ import annotations

import functools
import re

import pytest

import collective_kernels as ck
import collective_kernels_round2  # noqa: F401  (registers the round-2 cases)
import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32
from cute_lowering.analysis.collective_ops import collective_of
from cute_lowering.cutedsl import compile_ir, trace_ir
from cute_lowering.mlir import inert_values, new_context, parse_module

# a case of the corpus per family of collectives (all compile; none is a planted bug)
CORPUS = (
    "producer_arrives_consumers_sync",  # bar.arrive + bar.sync (named), make_warp_uniform
    "shfl_under_warp_condition",
    "vote_under_warp_condition",
    "redux_under_block_condition",
    "match_masked_to_its_lanes",
    "warp_sync_masked_to_its_lanes",
    "elect_under_warp0_around_mbarriers",  # elect.sync around per-thread mbarrier ops
    "ldmatrix_in_uniform_tail_loop",  # ldmatrix + mma.sync
    "wgmma_under_warpgroup_condition",
    "tmem_round_trip",  # tcgen05 alloc/ld/st/wait/relinquish/dealloc
    "tcgen05_commit_under_elect_one",  # tcgen05.commit: per-thread, not in the table
    # round 2 (issue 37)
    "mma_fp8_under_warp_guard",  # mma.sync with e4m3 operands (warp.MmaFP8Op)
    "tcgen05_cp_by_warp0",  # an S2T copy: elect.sync + tcgen05.cp
    "redux_inline_mask_of_its_lanes",  # redux.sync written as inline PTX
    "cluster_arrive_by_every_cta",  # barrier.cluster.arrive.relaxed
    "setmaxnreg_per_warp_same_count",  # setmaxnreg.dec and .inc
)


@cute.kernel
def _setmaxregister(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    cute.arch.setmaxregister_decrease(40)
    dst[tidx] = Float32(tidx)


@cute.kernel
def _sync_threads(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    dst[tidx] = Float32(tidx)
    cute.arch.sync_threads()


ONE_CALL = {"setmaxregister": (_setmaxregister, "sm_90a"), "sync_threads": (_sync_threads, "sm_90a")}


def _launcher(kernel):
    @cute.jit
    def launch(dst: cute.Tensor, n: Int32):
        kernel(dst, n).launch(grid=(1, 1, 1), block=(128, 1, 1))

    return launch


@functools.cache
def traced_and_compiled(name: str) -> tuple[str, str]:
    if name in ONE_CALL:
        kernel, arch = ONE_CALL[name]
        launch = _launcher(kernel)
    else:
        case = ck.CASES[name]
        launch, arch = ck.launcher(case), case.arch
    text = trace_ir(launch, *ck.fake_arguments(), options=f"--gpu-arch {arch}")
    return text, compile_ir(text, arch)


def _mnemonic(ptx_text: str) -> str:
    """'tcgen05.alloc.sync.aligned' -> 'tcgen05.alloc'; 'shfl.sync.idx.b32 x, ...' -> 'shfl.sync'."""
    first = ptx_text.split()[0]
    return ".".join(re.split(r"\.|::", first)[:2])


def matched(text: str) -> list:
    with new_context() as context, inert_values():
        module = parse_module(text, context)
        found = []

        def walk(op):
            for region in op.regions:
                for block in region.blocks:
                    for inner in block.operations:
                        entry = collective_of(inner.operation)
                        if entry is not None:
                            found.append(entry)
                        walk(inner.operation)

        walk(module.operation)
        return found


@pytest.mark.parametrize("name", CORPUS + tuple(ONE_CALL))
def test_every_matched_op_shows_its_instruction_in_the_ptx(name):
    text, ptx = traced_and_compiled(name)
    entries = matched(text)
    assert entries, f"{name}: no collective matched in its IR"
    for entry in entries:
        for part in entry.ptx.split(" + "):
            assert _mnemonic(part) in ptx, f"{entry.describes}: {_mnemonic(part)!r} not in the PTX of {name}"


def test_elect_lowered_ops_carry_their_own_elect():
    """A TMA load or a tcgen05 MMA lowers to elect.sync + the instruction: the table says so."""
    from cute_lowering.analysis.collective_ops import COLLECTIVES

    for entry in COLLECTIVES:
        if entry.elect:
            assert "elect.sync" in entry.ptx, entry


def test_per_thread_ops_are_not_collectives():
    text, ptx = traced_and_compiled("tcgen05_commit_under_elect_one")
    assert "tcgen05.commit" in ptx and "mbarrier.init" in ptx
    names = {e.op for e in matched(text)}
    assert not any("mbarrier" in n or "commit" in n for n in names)


def test_every_entry_cites_its_ptx_rule_and_exit_semantics():
    """Issue 37: each entry says which PTX ISA rule makes it a collective and what it requires of
    exited threads (excused: the instruction waits for the non-exited ones)."""
    from cute_lowering.analysis.collective_ops import COLLECTIVES

    for entry in COLLECTIVES:
        assert entry.rule.startswith("PTX ISA"), entry
        assert entry.exited in ("excused", "holds"), entry
    by_op = {e.op: e for e in COLLECTIVES}
    assert by_op["nvvm.barrier0"].exited == "excused"  # exit releases a barrier for all threads
    assert by_op["nvvm.vote.sync"].exited == "excused"  # waits for the non-exited lanes
    assert by_op["nvvm.shfl.sync"].exited == "holds"  # a source lane that exited: undefined
    assert by_op["nvvm.ldmatrix"].exited == "holds"  # .aligned


def test_the_three_readings_issue_37_settled_from_the_ptx_isa():
    """bar.warp.sync waits for "all threads corresponding to membermask" (not, as vote/redux/
    match say, the non-exited ones): an exit does not excuse (the table said it did);
    elect.sync waits for "all threads in the membermask": not excused (as it was);
    tcgen05.ld/st: "All the threads in the warp must specify the same value of taddr": one
    address per warp (as it was). The quotes sit next to the entries."""
    import inspect

    from cute_lowering.analysis import collective_ops
    from cute_lowering.analysis.collective_ops import COLLECTIVES, _inline

    by_op = {e.op: e for e in COLLECTIVES}
    assert by_op["nvvm.bar.warp.sync"].exited == "holds"
    assert by_op["nvvm.elect.sync"].exited == "holds"
    for atom, operand in (("tmem_load", 1), ("tmem_store", 2)):
        (entry,) = [e for e in COLLECTIVES if e.atom == atom]
        assert entry.uniform_operand == operand and "same taddr" in entry.rule
    flat = " ".join(inspect.getsource(collective_ops).replace("#", " ").split())  # the comments, joined
    for quote in ("wait until all threads corresponding to membermask have executed a bar.warp.sync",
                  "wait until all threads in the membermask execute the elect instruction",
                  "All the threads in the warp must specify the same value of taddr"):  # fmt: skip
        assert quote in flat, quote

    class _Asm:
        name = "llvm.inline_asm"
        operands = ()

        def __init__(self, text):
            self.attributes = {"asm_string": f'"{text}"', "constraints": '""'}

    assert _inline(_Asm("bar.warp.sync 0xffffffff;")).exited == "holds"
    assert _inline(_Asm("vote.sync.ballot.b32 $0, p, 0xffffffff;")).exited == "excused"


def test_inline_ptx_member_masks_are_read():
    from cute_lowering.analysis.collective_ops import _inline_mask

    class _Op:
        name = "llvm.inline_asm"
        operands = (None, None)
        attributes = {"asm_string": "x", "constraints": '"=r,r,r"'}

    assert _inline_mask(_Op(), "redux.sync.add.s32 $0, $1, $2;") == (1, None)
    assert _inline_mask(_Op(), "vote.sync.ballot.b32 $0, p, 0x0000ffff;") == (None, 0xFFFF)
