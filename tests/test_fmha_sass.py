"""bench/fmha_sass.py: the wgmma FMHA's key loop in SASS, without a GPU.

The key loop of the default D=128 unmasked build issues 16 wgmmas a key block (S = Q K^T over
D = 128 in 8 k-steps of 16, P V over 128 keys in 8) and converts P once: each consumer thread
holds 64 x 128 / 128 = 64 of its warpgroup's P values, packed two to an F2FP, so 32. A build
that converts P twice in the loop (what ncu found in session 15's O_DIRECT build) fails here;
the O_DIRECT builds are checked the same way.
"""

from __future__ import annotations

import os
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import fmha_sass  # noqa: E402
import sass  # noqa: E402

try:
    sass.disassembler()
    HAVE_DISASSEMBLER = True
except sass.NoDisassembler:
    HAVE_DISASSEMBLER = False

pytestmark = pytest.mark.skipif(not HAVE_DISASSEMBLER, reason="no cuobjdump or nvdisasm (pip install nvidia-cuda-nvdisasm)")


def _key_loops(text: str, hgmma: int = 16) -> list:
    """The innermost loops issuing `hgmma` wgmmas (a key block's S and P V at D=128)."""
    return [loop for loop in sass.innermost(sass.loops(text), "HGMMA") if loop.counts["HGMMA"] == hgmma]


def test_default_d128_key_loop_converts_p_once(tmp_path):
    text = fmha_sass.variant_sass("now", 128, False, str(tmp_path))
    keys = _key_loops(text)
    assert keys, "no loop of 16 HGMMA in the D=128 build"
    assert [loop.counts["F2FP"] for loop in keys] == [32] * len(keys)
    assert all(loop.counts["MUFU"] >= 64 for loop in keys)  # an exp2 a score value (64 a thread)


@pytest.mark.parametrize("variant, wide_keys, block_n", [("wide176", True, 176), ("wide192_pp", True, 192)])
def test_o_direct_key_loop_converts_p_once(tmp_path, variant, wide_keys, block_n):
    """O from registers (the wide-key tiles, which take it, with or without the scheduler barrier)
    converted P twice in the key loop until the in-loop S wgmma stopped naming P's
    f32 values as its input (62 F2FP against 32)."""
    text = fmha_sass.variant_sass(variant, 128, False, str(tmp_path), wide_keys=wide_keys)
    hgmma = 128 // 16 + block_n // 16  # S over D in k-steps of 16, P V over the block's keys
    keys = _key_loops(text, hgmma)
    assert keys, f"no loop of {hgmma} HGMMA in the {variant} build"
    assert {loop.counts["F2FP"] for loop in keys} == {block_n // 4}  # 64 x block_n P a warpgroup, 128 threads, 2 a pack


def test_causal_build_has_a_masked_and_an_unmasked_key_loop(tmp_path):
    """--causal builds the causal kernel (a right limit): at D=128 its key loop is two loops
    (MASK_LOOPS), the diagonal's blocks with the element mask (FSEL a score value) and the rest
    without any. (Until session 19 it built a left window, whose one loop decides per block.)"""
    text = fmha_sass.variant_sass("now", 128, True, str(tmp_path))
    keys = _key_loops(text)
    assert len(keys) == 2, [(loop.label, loop.size) for loop in keys]
    masked, unmasked = sorted(keys, key=lambda loop: -loop.counts["FSEL"])
    assert masked.counts["FSEL"] >= 64 and unmasked.counts["FSEL"] < 8, (masked.counts["FSEL"], unmasked.counts["FSEL"])
    assert masked.size > unmasked.size


def test_default_d128_loop_has_no_element_mask_and_keeps_exp2s_before_the_pv_wait(tmp_path):
    """MASK_LOOPS at (128, False): the 128 x 128 build's key loop carries no masked softmax (no
    FSEL; until session 19 a runtime test kept a 309-instruction masked branch in it), and ptxas
    keeps part of the softmax before the P V's wait (17 of 66 exp2s when measured; FA3 13). The
    wide build keeps the runtime test: without it ptxas put that wait above every exp2 (-6%).
    (Before the change the 128 x 128 loop had 98 MUFU and 67 FSEL in its span: this fails.)"""
    text = fmha_sass.variant_sass("now", 128, False, str(tmp_path))
    main = _key_loops(text)[-1]  # (the attention kernel's; the tail pieces' kernel comes first)
    # (the masked softmax selects -inf a score: 64 FSEL a block; the rows' -inf guards leave 2)
    assert main.counts["FSEL"] < 8 and main.counts["MUFU"] == 66, (main.size, main.counts["FSEL"], main.counts["MUFU"])
    assert 8 <= sass.count_before(text, main, "MUFU", fmha_sass.pv_wait) <= 40
    wide = fmha_sass.variant_sass("now", 128, False, str(tmp_path), wide_keys=True)
    main = _key_loops(wide, 128 // 16 + 192 // 16)[-1]
    assert main.counts["FSEL"] >= 64 and sass.count_before(wide, main, "MUFU", fmha_sass.pv_wait) >= 24


def test_unknown_variant_is_refused_by_name(capsys):
    with pytest.raises(SystemExit) as exit_:
        fmha_sass.main(["--variants", "now,nosuch"])
    assert exit_.value.code == 2 and "unknown variant(s) nosuch" in capsys.readouterr().err


def test_count_before_stops_at_the_first_match():
    text = "\n".join([
        ".L_x_1:",
        "        /*0000*/                   MUFU.EX2 R1, R1 ;",
        "        /*0010*/                   MUFU.EX2 R2, R2 ;",
        "        /*0020*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;",
        "        /*0030*/                   MUFU.EX2 R3, R3 ;",
        "        /*0040*/               @P1 BRA `(.L_x_1) ;",
    ])
    (loop,) = sass.loops(text)
    assert sass.count_before(text, loop, "MUFU", fmha_sass.pv_wait) == 2
    assert sass.count_before(text, loop, "MUFU", lambda op, operands: False) is None
    assert not fmha_sass.pv_wait("WARPGROUP.DEPBAR.LE", "gsb0, 0x1")


def test_the_report_lists_the_key_loop_of_each_variant(tmp_path):
    texts = {name: fmha_sass.variant_sass(name, 128, False, str(tmp_path)) for name in ("now", "stmatrix")}
    rows = [line for line in fmha_sass.table(texts).splitlines()[2:]]
    assert {row.split(" | ")[0].strip("| ") for row in rows} == {"now", "stmatrix"}
    assert all(row.count("|") == 16 for row in rows)


def test_disassembly_counts_instructions():
    text = "\n".join([
        ".L_x_1:",
        "        /*0000*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], R24 ;",
        "        /*0010*/              @!P0 F2FP.BF16.F32.PACK_AB R2, R3, R2 ;",
        "        /*0020*/                   NOP ;",
        "        /*0030*/               @P1 BRA `(.L_x_1) ;",
    ])
    (loop,) = sass.loops(text)
    assert (loop.label, loop.size, loop.counts["HGMMA"], loop.counts["F2FP"], loop.counts["NOP"]) == (".L_x_1", 3, 1, 1, 0)
    assert sass.opcodes(text) == {"HGMMA": 1, "F2FP": 1, "BRA": 1}
