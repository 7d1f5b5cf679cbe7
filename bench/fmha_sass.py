"""The wgmma FMHA's loops in SASS, per knob variant, without a GPU.

    python bench/fmha_sass.py [--variants now,stmatrix] [--head-dim 128] [--causal] [--wide-keys] [--out DIR]

Each variant (a name of `fmha_peers.VARIANTS`, "now" for the knobs as they are) is compiled
for sm_90a through the hook (`cute_lowering.kernels.fmha_sm90._compile`, bf16, no sink), its cubin
disassembled (`bench/sass.py`: cuobjdump or nvdisasm), and every loop that issues wgmmas
(`HGMMA`) and holds no other such loop (mbarrier retry loops may lie inside) printed with its size and the opcodes the softmax and P's
conversion are made of (`--every-loop`: the enclosing spans too).
A variant's loop that grew or shrank against the first variant's is what to look at before
spending GPU time on it: session 15's ncu finding (O_DIRECT's key loop converts P twice, 62
`F2FP` a block against 32) shows here as the loop of 16 HGMMA. Instruction counts are not
time: a longer loop can be faster (the wgmmas overlap it); they say what ptxas made.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import re
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench")]
os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

from sass import count_before, disassemble, innermost, loops, opcodes  # noqa: E402

SHOWN = ("HGMMA", "MUFU", "F2FP", "FMNMX", "FMUL", "FADD", "FFMA", "FSEL", "BAR", "SYNCS")


def variant_sass(name: str, head_dim: int, causal: bool, workdir: str, wide_keys: bool = False) -> str:
    """The SASS of the FMHA kernel built with variant `name`'s knobs (a `Knobs` value passed to
    config_for: no module is touched); `wide_keys`: the build for calls with at least
    `wide_keys_min` keys (`wide_key_tiles`)."""
    from fmha_peers import variant_knobs
    from cute_lowering.kernels import fmha_sm90
    from cute_lowering.kernels.fmha_sm90_knobs import DEFAULT_KNOBS

    knobs = DEFAULT_KNOBS if name == "now" else variant_knobs(name)[0]  # (the fmha_decode knobs: not this build's)
    config = fmha_sm90.config_for(head_dim, False, causal, False, wide_keys, knobs=knobs)  # (causal: a right limit)
    dump = os.path.join(workdir, name)
    os.makedirs(dump, exist_ok=True)  # (CuTeDSL keeps nothing in a folder that does not exist)
    compiled = fmha_sm90._compile.__wrapped__("bfloat16", head_dim, False, causal, False, "sm_90a",
                                              f"--keep-cubin --dump-dir {dump}", False, config)
    return disassemble(compiled.__cubin__)


def pv_wait(opcode: str, operands: str) -> bool:
    """The wait for a key block's P V wgmma: `wgmma.wait_group 0` (the S wgmma's is `1`)."""
    return opcode.startswith("WARPGROUP.DEPBAR") and re.search(r"gsb0,\s*0x0\b", operands) is not None


def table(texts: dict[str, str], every_loop: bool = False) -> str:
    """A row a loop; "exp2 before P V wait": the loop's MUFUs that ptxas placed before its wait for
    the P V wgmma, i.e. the part of the softmax that runs beside the warpgroup's own P V (session
    19: FA3's loops 13 of 66 at 128 x 128, 19-23 of 90 at 128 x 176)."""
    lines = ["| variant | instructions | loop (label) | size | exp2 before P V wait | " + " | ".join(SHOWN) + " |",
             "| --- | --- | --- | --- | --- | " + " | ".join("---" for _ in SHOWN) + " |"]
    for name, text in texts.items():
        total = sum(opcodes(text).values())
        shown = [loop for loop in loops(text) if loop.counts["HGMMA"]] if every_loop else innermost(loops(text), "HGMMA")
        for loop in shown:
            cells = " | ".join(str(loop.counts[op]) for op in SHOWN)
            before = count_before(text, loop, "MUFU", pv_wait)
            lines.append(f"| {name} | {total} | {loop.label} | {loop.size} | {'-' if before is None else before} | {cells} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--variants", default="now,stmatrix")
    ap.add_argument("--head-dim", type=int, default=128, choices=(64, 128))
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--wide-keys", action="store_true", help="the build for calls with many keys (Knobs.wide_key_tiles)")
    ap.add_argument("--every-loop", action="store_true", help="also the spans that hold other loops (tile loops)")
    ap.add_argument("--out", help="folder for the SASS of each variant and fmha_sass.md")
    args = ap.parse_args(argv)
    from fmha_peers import VARIANTS

    unknown = [name for name in args.variants.split(",") if name != "now" and name not in VARIANTS]
    if unknown:
        ap.error(f"unknown variant(s) {', '.join(unknown)}; known: now, {', '.join(sorted(VARIANTS))}")
    with tempfile.TemporaryDirectory() as workdir:
        texts = {name: variant_sass(name, args.head_dim, args.causal, workdir, args.wide_keys) for name in args.variants.split(",")}
    report = table(texts, args.every_loop)
    print(report)
    if args.out:
        out = pathlib.Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        for name, text in texts.items():
            (out / f"{name}.sass").write_text(text)
        (out / "fmha_sass.md").write_text(report + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
