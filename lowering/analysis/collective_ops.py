"""Which IR ops are collectives, at what scope, and the PTX each becomes: data, with its evidence.

Whether an op is collective is a fact about how CuTeDSL 4.8.1 lowers it, not about its
name. Each entry was read off the PTX CuTeDSL emits for it (compiled with no GPU,
`CUTE_DSL_ARCH=sm_90a`/`sm_100a`, `cute_lowering.cutedsl.compile_ir`); `evidence` says where.
The PTX ISA's rule behind each: an instruction with `.sync.aligned` (or `.sync` with a
member mask) must be executed by every thread of its group, together; `bar.sync` /
`barrier.sync.aligned` by every thread the barrier counts.

- `scope`: the group every member of which must execute the op together.
- `mask_operand`: the operand holding a member mask (shfl/vote/redux/match/bar.warp):
  the lanes it names are the group, so a mask of the lanes that reach the op is legal.
- `count_operand`: a named barrier's thread count: the group is the warps that reach it
  (the count is checked against them).
- `elect`: the op lowers to `elect.sync` + the instruction, so the whole warp is a
  party to it although one thread issues the hardware op (CuTeDSL's `elect_one`
  docstring warns about the same thing).
- `atom`: for `cute.copy` / `cute.gemm`, a substring of the copy/MMA atom type that
  selects the entry (the op name alone says nothing).

- `exited`: what a thread that executed `exit` before the op does to it (the PTX ISA):
  "excused" where the instruction waits only for the non-exited threads of its group
  (`vote.sync`, `redux.sync`, `match.sync`: "wait until all non-exited threads
  corresponding to membermask"; `bar.sync`/`barrier.sync` for all the CTA and
  `barrier.cluster.arrive`: "if the exiting threads are holding up the barrier, the barrier
  is released"; a counted `bar.sync`/`bar.arrive` waits for the non-exited threads of each
  warp that arrives); "holds" where an exited thread is a thread that never executes it
  (`.sync.aligned` instructions: every thread of the warp executes the same one;
  `shfl.sync`: a source lane that exited gives an undefined value; `bar.warp.sync` and
  `elect.sync`, whose ISA text, unlike vote/redux/match's, names all the threads of the
  mask, not the non-exited ones: see their entries).
- `cluster`: the group spans the CTAs of a cluster (a CTA-uniform condition that differs
  between them, `cluster.ctarank == 0`, splits it).

Per-thread ops, on purpose absent from `COLLECTIVES` (one thread may issue them): the
mbarrier ops (`nvvm.mbarrier.init/arrive/arrive.expect_tx/try_wait`), `nvvm.tcgen05.commit`,
`cute.copy` with a TMA *store* atom (`cp.async.bulk.tensor` with no `elect.sync`),
`nvvm.cp.async.bulk.*`, fences, `barrier.cluster.wait` (a thread that does not wait blocks
no one).

Not covered: cluster-scope MMA (cta_group::2) pairs; a `cute.copy`/`cute.gemm` whose atom
matches no entry is treated as per-thread.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cute_lowering.analysis.uniformity import Scope


@dataclass(frozen=True)
class Collective:
    op: str  # IR op name
    scope: Scope
    ptx: str  # what it becomes
    evidence: str
    atom: str | None = None  # cute.copy/cute.gemm: substring of the atom type (first operand)
    mask_operand: int | None = None
    count_operand: str | None = None  # "number_of_threads" for named barriers
    elect: bool = False
    arrive_anywhere: bool = False  # every thread must reach one of the op's sites, not each site
    exited: str = "holds"  # "excused": exited threads are not waited for (see the module docstring)
    cluster: bool = False  # the group is the cluster's threads
    mask_value: int | None = None  # a member mask written into inline PTX as a literal
    rule: str = ""  # the PTX ISA's rule behind the entry
    uniform_operand: int | None = None  # an operand every thread of the group must give the same value

    @property
    def describes(self) -> str:
        return f"'{self.op}'" + (f" with a {self.atom} atom" if self.atom else "") + (f" (PTX {self.ptx})" if self.ptx else "")


_Q100 = "quack 0.6.5 gemm_bf16 sm_100a PTX"
_Q90 = "quack 0.6.5 gemm_bf16 sm_90a PTX"
_TINY = "tests/test_collective_ops.py (traced, compiled, the PTX read)"

_ALIGNED = "PTX ISA: .aligned: all threads in the warp must execute the same instruction"
_MASKED = "PTX ISA: waits until all non-exited threads of membermask have executed it, with the same mask"
_BAR = ("PTX ISA barrier{.cta}: without a count all threads of the CTA participate; exiting threads "
        "holding up a barrier for all threads release it")
_COUNTED = ("PTX ISA barrier{.cta}: b threads (a multiple of the warp size) participate; a warp arrives for "
            "its non-exited threads")
_WG = "PTX ISA wgmma.*.sync.aligned: all threads of the warpgroup execute the same instruction"
_TC = "PTX ISA tcgen05.*.sync.aligned: all threads of the warp execute the same instruction"
_TADDR = "; all threads of the warp give the same taddr (the collective access's base address)"

COLLECTIVES: tuple[Collective, ...] = (
    # --- CTA scope
    Collective("nvvm.barrier", Scope.CTA, "bar.sync", "cute.arch.sync_threads / barrier: " + _TINY,
               count_operand="number_of_threads", exited="excused", rule=_BAR),
    Collective("nvvm.barrier0", Scope.CTA, "bar.sync 0", "upstream NVVM: __syncthreads", exited="excused", rule=_BAR),
    Collective("nvvm.barrier.arrive", Scope.CTA, "bar.arrive id, count", _Q100 + ": bar.arrive 8, 64",
               count_operand="number_of_threads", exited="excused", rule=_COUNTED),
    # barrier.cluster.arrive as CuTeDSL emits it (no .aligned): each thread arrives on its own,
    # from any site; the barrier completes when every thread of the cluster has arrived. So
    # the arrive sites are judged together (`arrive_anywhere`): every thread must reach one.
    # barrier.cluster.wait is then per-thread (a thread that does not wait blocks no one).
    Collective("nvvm.cluster.arrive", Scope.CTA, "barrier.cluster.arrive", _Q100, arrive_anywhere=True, exited="excused",
               cluster=True, rule="PTX ISA barrier.cluster: every non-exited thread of the cluster arrives; exit releases it"),
    Collective("nvvm.cluster.arrive.relaxed", Scope.CTA, "barrier.cluster.arrive.relaxed", _Q100, arrive_anywhere=True,
               exited="excused", cluster=True, rule="PTX ISA barrier.cluster (as above)"),
    # --- warpgroup scope
    Collective("nvvm.wgmma.fence.aligned", Scope.WARPGROUP, "wgmma.fence.sync.aligned", _Q90, rule=_WG),
    Collective("nvvm.wgmma.commit.group.sync.aligned", Scope.WARPGROUP, "wgmma.commit_group.sync.aligned", _Q90, rule=_WG),
    Collective("nvvm.wgmma.wait.group.sync.aligned", Scope.WARPGROUP, "wgmma.wait_group.sync.aligned", _Q90, rule=_WG),
    Collective("nvvm.wgmma.mma_async", Scope.WARPGROUP, "wgmma.mma_async.sync.aligned", "upstream NVVM op", rule=_WG),
    Collective("cute.gemm", Scope.WARPGROUP, "wgmma.mma_async.sync.aligned", _Q90 + ", kernels/fmha_sm90.py, " + _TINY,
               atom="sm90", rule=_WG),
    # setmaxnreg: the PTX ISA asks every warp of the warpgroup to execute "the same" setmaxnreg;
    # FlashAttention-4 (sm_100, in production) has each warp of a warp-specialized warpgroup
    # execute its own, same-count setmaxnreg in a warp-uniform branch, and the hardware takes it.
    # So divergence is checked per warp (.sync.aligned), and per warpgroup across sites: every
    # warp of a warpgroup one of whose warps runs a setmaxnreg runs one with the same action
    # and count (check_collectives.py, `_setmaxnreg`).
    Collective("nvvm.setmaxregister", Scope.WARP, "setmaxnreg.dec.sync.aligned (or .inc)",
               "cute.arch.setmaxregister_*: " + _Q100 + "; FA4 flash_fwd_sm100.py:1308-1379 (one per warp)",
               rule="PTX ISA setmaxnreg: .sync.aligned; the same setmaxnreg by all warps of a warpgroup"),
    # --- warp scope
    Collective("cute.gemm", Scope.WARP, "elect.sync + tcgen05.mma", _Q100 + ": each tcgen05.mma under its own elect.sync",
               atom="sm100", elect=True, rule="PTX ISA elect.sync: all threads of membermask execute it (.sync)"),
    Collective("cute.gemm", Scope.WARP, "mma.sync.aligned (FP8 e4m3/e5m2)", "warp.MmaFP8Op: " + _TINY, atom="sm89", rule=_ALIGNED),
    Collective("cute.gemm", Scope.WARP, "mma.sync.aligned", "kernels/fmha.py mma_sync path PTX (256 mma.sync), " + _TINY,
               atom="sm80", rule=_ALIGNED),
    Collective("cute.gemm", Scope.WARP, "mma.sync.aligned (sm_120 block-scaled)", "warp.MmaMXF8*Op atoms", atom="sm120",
               rule=_ALIGNED),
    # One TMEM address per warp (our reading confirmed). PTX ISA (9.x) section 9.7.17.8.3,
    # "Tensorcore 5th Generation Instructions: tcgen05.ld": "All the threads in the warp
    # must specify the same value of taddr, which must be the base address of the collective
    # load operation. Otherwise, the behavior is undefined." (tcgen05.st, the next section:
    # the same sentence with "collective store operation".)
    Collective("cute.copy", Scope.WARP, "tcgen05.ld.sync.aligned", _Q100, atom="tmem_load", rule=_TC + _TADDR,
               uniform_operand=1),
    Collective("cute.copy", Scope.WARP, "tcgen05.st.sync.aligned", "tcgen05 St atoms: " + _TINY, atom="tmem_store",
               rule=_TC + _TADDR, uniform_operand=2),
    # tcgen05.cp (SMEM to TMEM): CuTeDSL lowers each S2T copy to its own elect.sync + tcgen05.cp, so
    # the whole warp must reach it (under `elect_one` the elect.sync runs in one thread)
    Collective("cute.copy", Scope.WARP, "elect.sync + tcgen05.cp", "tcgen05.Cp*Op S2T atoms: " + _TINY, atom="s2t",
               elect=True, rule="PTX ISA elect.sync (.sync, membermask all lanes)"),
    Collective("cute.copy", Scope.WARP, "ldmatrix.sync.aligned", "kernels/fmha.py mma_sync path PTX (80 ldmatrix), " + _TINY,
               atom="ldsm", rule=_ALIGNED),
    Collective("cute.copy", Scope.WARP, "stmatrix.sync.aligned", _Q90 + " (24 stmatrix)", atom="stsm", rule=_ALIGNED),
    Collective("cute.copy", Scope.WARP, "elect.sync + cp.async.bulk.tensor", _Q100 + ": each TMA load under its own elect.sync",
               atom="tma_load", elect=True, rule="PTX ISA elect.sync (.sync, membermask all lanes)"),
    Collective("cute_nvgpu.arch.sm100.alloc_tmem", Scope.WARP, "tcgen05.alloc.sync.aligned", _Q100, rule=_TC),
    Collective("cute_nvgpu.arch.sm100.dealloc_tmem", Scope.WARP, "tcgen05.dealloc.sync.aligned", _Q100, rule=_TC),
    Collective("cute_nvgpu.arch.sm100.relinquish_tmem_alloc_permit", Scope.WARP, "tcgen05.relinquish_alloc_permit.sync.aligned",
               _Q100, rule=_TC),
    Collective("nvvm.tcgen05.wait", Scope.WARP, "tcgen05.wait::ld/st.sync.aligned", _Q100, rule=_TC),
    Collective("nvvm.tcgen05.alloc", Scope.WARP, "tcgen05.alloc.sync.aligned", "upstream NVVM op", rule=_TC),
    Collective("nvvm.tcgen05.dealloc", Scope.WARP, "tcgen05.dealloc.sync.aligned", "upstream NVVM op", rule=_TC),
    Collective("nvvm.tcgen05.relinquish_alloc_permit", Scope.WARP, "tcgen05.relinquish_alloc_permit.sync.aligned",
               "upstream NVVM op", rule=_TC),
    Collective("nvvm.tcgen05.ld", Scope.WARP, "tcgen05.ld.sync.aligned", "upstream NVVM op", rule=_TC),
    Collective("nvvm.tcgen05.st", Scope.WARP, "tcgen05.st.sync.aligned", "upstream NVVM op", rule=_TC),
    Collective("nvvm.ldmatrix", Scope.WARP, "ldmatrix.sync.aligned", "upstream NVVM op", rule=_ALIGNED),
    Collective("nvvm.stmatrix", Scope.WARP, "stmatrix.sync.aligned", "upstream NVVM op", rule=_ALIGNED),
    Collective("nvvm.mma.sync", Scope.WARP, "mma.sync.aligned", "upstream NVVM op", rule=_ALIGNED),
    Collective("nvvm.shfl.sync", Scope.WARP, "shfl.sync", "cute.arch.shuffle_sync*: " + _TINY, mask_operand=0,
               rule=_MASKED + "; a source lane that exited or is not in the mask gives an undefined value"),
    Collective("nvvm.vote.sync", Scope.WARP, "vote.sync", "cute.arch.vote_*_sync: " + _TINY, mask_operand=0, exited="excused",
               rule=_MASKED),
    Collective("nvvm.redux.sync", Scope.WARP, "redux.sync", "cute.arch.warp_redux_sync: " + _TINY, mask_operand=1,
               exited="excused", rule=_MASKED),
    Collective("nvvm.match.sync", Scope.WARP, "match.any.sync (or match.all.sync)", "cute.arch.match_sync: " + _TINY,
               mask_operand=0, exited="excused", rule=_MASKED),
    # bar.warp.sync: exited lanes are NOT excused (issue 37 settled this; the table said
    # "excused" before). PTX ISA (9.x) section 9.7.15.2, "Parallel Synchronization and
    # Communication Instructions: bar.warp.sync": "bar.warp.sync will cause executing thread
    # to wait until all threads corresponding to membermask have executed a bar.warp.sync with
    # the same membermask value before resuming execution." Where the ISA excuses exited
    # threads it says so: vote.sync/redux.sync/match.sync "wait until all non-exited threads
    # corresponding to membermask", barrier{.cta} "wait for all non-exited threads from its
    # warp". (The CUDA C++ Programming Guide's __syncwarp, which compiles to bar.warp.sync,
    # says "All non-exited threads named in mask must execute a corresponding __syncwarp()":
    # the C++ contract is looser than the PTX one; this check follows the PTX ISA.)
    Collective("nvvm.bar.warp.sync", Scope.WARP, "bar.warp.sync", "cute.arch.sync_warp: " + _Q100, mask_operand=0,
               rule="PTX ISA bar.warp.sync: waits until all threads of membermask (exited ones too) executed it"),
    # elect.sync: exited lanes are not excused either (our reading confirmed). PTX ISA,
    # "Parallel Synchronization and Communication Instructions: elect.sync": "The mandatory .sync qualifier indicates that elect causes the executing
    # thread to wait until all threads in the membermask execute the elect instruction before
    # resuming execution." and "The behavior is undefined if the executing thread is not in
    # membermask." (CuTeDSL's elect_one passes the full mask.)
    Collective("nvvm.elect.sync", Scope.WARP, "elect.sync", "cute.arch.elect_one: " + _Q100,
               rule="PTX ISA elect.sync: all threads of membermask execute it (.sync)"),
    Collective("cute_nvgpu.arch.make_warp_uniform", Scope.WARP, "shfl.sync.idx.b32 x, 0, 31, -1",
               _Q100 + ": cute.arch.make_warp_uniform(warp_idx) is a full-warp broadcast from lane 0",
               rule=_MASKED + " (a full-mask broadcast from lane 0)"),
)  # fmt: skip

# PTX mnemonics that make an inline-asm block (llvm.inline_asm, nvvm.inline_ptx) a collective,
# with what exited threads do (see `exited`) and whether the instruction's last operand is a
# member mask (shfl/vote/redux/match/bar.warp: `redux.sync.add.s32 d, a, membermask;`)
INLINE_PTX: tuple[tuple[str, Scope, str, bool], ...] = (
    # a barrier with a thread count (`bar.sync 1, 128;`, `bar.arrive ...`): the warps that reach
    # it must be whole; its count is not read from the text
    (r"\b(bar|barrier)(\.cta)?\.(sync|arrive|red)(\.aligned)?\s+[^,;]+,[^;]+;", Scope.WARP, "excused", False),
    (r"\bbar\.sync\b|\bbarrier\.sync\b|\bbarrier\.cta\.sync\b", Scope.CTA, "excused", False),
    (r"\bwgmma\.", Scope.WARPGROUP, "holds", False),
    (r"\b(vote|redux|match)\.sync\b[^;]*;", Scope.WARP, "excused", True),
    (r"\bbar\.warp\.sync\b[^;]*;", Scope.WARP, "holds", True),  # all of membermask, exited too (see the table)
    (r"\bshfl\.sync\b[^;]*;", Scope.WARP, "holds", True),
    (r"\bsetmaxnreg\.|\belect\.sync\b|\bldmatrix\.|\bstmatrix\.|\bmma\.sync\b"
     r"|\btcgen05\.(ld|st|alloc|dealloc|relinquish_alloc_permit|wait)\b", Scope.WARP, "holds", False),
)  # fmt: skip

_BY_NAME: dict[str, list[Collective]] = {}
for _entry in COLLECTIVES:
    _BY_NAME.setdefault(_entry.op, []).append(_entry)


def collective_of(op) -> Collective | None:
    """The table entry `op` matches, or None for an op any subset of threads may run."""
    entries = _BY_NAME.get(op.name)
    if entries is not None:
        if entries[0].atom is None:
            return entries[0]
        operands = list(op.operands)
        atom_type = str(operands[0].type) if operands else ""
        for entry in entries:
            if entry.atom and entry.atom in atom_type:
                return entry
        return None
    if op.name in ("llvm.inline_asm", "nvvm.inline_ptx"):
        return _inline(op)
    return None


def _inline(op) -> Collective | None:
    for key in ("asm_string", "ptxCode"):
        if key in op.attributes:
            text = str(op.attributes[key]).strip('"')
            break
    else:
        return None
    for pattern, scope, exited, masked in INLINE_PTX:
        found = re.search(pattern, text)
        if found:
            mask_operand, mask_value = (_inline_mask(op, found.group(0)) if masked else (None, None))
            if masked and mask_operand is None and mask_value is None:
                mask_value = 0xFFFFFFFF  # a mask this check cannot read: taken as the full warp
            mnemonic = found.group(0).split()[0] if masked else found.group(0)
            return Collective(op.name, scope, mnemonic, "inline PTX read from the op", mask_operand=mask_operand,
                              mask_value=mask_value, exited=exited, rule="PTX ISA, as for the instruction's nvvm op")
    return None


def _inline_mask(op, instruction: str) -> tuple[int | None, int | None]:
    """(operand index, literal) of the member mask, the instruction's last operand: `$N` in
    `llvm.inline_asm` (outputs numbered first), an integer literal, or neither."""
    last = instruction.rstrip(";").split(",")[-1].strip()
    if re.fullmatch(r"-?(0[xX][0-9a-fA-F]+|\d+)", last):
        return None, int(last, 0) & 0xFFFFFFFF
    number = re.fullmatch(r"\$(\d+)", last)
    if number is None or op.name != "llvm.inline_asm" or "asm_string" not in op.attributes:
        return None, None
    constraints = str(op.attributes["constraints"]).strip('"') if "constraints" in op.attributes else ""
    outputs = sum(1 for c in constraints.split(",") if c.startswith("="))
    index = int(number.group(1)) - outputs
    return (index, None) if 0 <= index < len(list(op.operands)) else (None, None)


def op_names() -> set[str]:
    """Every op name that may be a collective (the table's, and inline PTX)."""
    return set(_BY_NAME) | {"llvm.inline_asm", "nvvm.inline_ptx"}


TMEM_ALLOC = "cute_nvgpu.arch.sm100.alloc_tmem"
TMEM_DEALLOC = "cute_nvgpu.arch.sm100.dealloc_tmem"
TMEM_RETRIEVE = "cute_nvgpu.arch.sm100.retrieve_tmem_ptr"
TMEM_COLUMNS = (32, 512)  # tcgen05.alloc: nCols a power of two in [32, 512]
