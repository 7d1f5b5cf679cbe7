"""What the fused NVFP4 output costs beyond its quantization arithmetic (H200 or H100).

    python bench/nvfp4_floor.py --out DIR [--rounds 3]

For each causal NVFP4 case of issue 35 (4x16x4096x128, 8x16x2048x64), this times five calls
alternating, one round after another: the bf16 output; the default fused NVFP4 output; and
three builds of the fused kernel with `Sm90Epilogues.quantize_own_rows` traced as a no-op
(the same kernel with no conversion work, whose codes are then never written). The three are
that no-op as it is, without the NVFP4 scheduler barrier (`nvfp4_pingpong` empty), and with
the quantization's site in the epilogue (`nvfp4_defer` off). If the no-op runs at bf16's time,
the whole of fused / bf16 is the quantization's instructions, not the build's structure.

The launch path keeps one build per `Knobs` value. So each no-op build gets a value of its own
by `section_bytes` + 1, 2 or 3. That is the dynamic order's L2 section, and a byte more groups
no tile differently. The no-op is traced while the patch is in place; later calls reuse that
build. Same timer as fmha_peers (cold L2, median GPU time). Writes DIR/nvfp4_floor.json. Needs
a GPU.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench")]

CASES = ((4, 16, 4096, 128), (8, 16, 2048, 64))  # (B, H, S, D), causal: fmha_peers.NVFP4_CASES' causal rows


@contextlib.contextmanager
def quantization_traced_out():
    """While inside, kernels traced have no NVFP4 quantization (the epilogue and the deferred path)."""
    from cute_lowering.kernels import fmha_sm90_epilogue

    real = fmha_sm90_epilogue.Sm90Epilogues.quantize_own_rows
    fmha_sm90_epilogue.Sm90Epilogues.quantize_own_rows = lambda *args, **kwargs: None
    try:
        yield
    finally:
        fmha_sm90_epilogue.Sm90Epilogues.quantize_own_rows = real


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")

    import torch

    if not torch.cuda.is_available():
        print("nvfp4_floor: no CUDA device here; it times GPU kernels", file=sys.stderr)
        return 2
    from fmha_peers import make_inputs, time_ms
    from cute_lowering.kernels import fmha, nvfp4
    from cute_lowering.kernels.fmha_sm90_knobs import DEFAULT_KNOBS

    base = DEFAULT_KNOBS.section_bytes
    no_op_knobs = {
        "noop": dataclasses.replace(DEFAULT_KNOBS, section_bytes=base + 1),
        "noop_no_barrier": dataclasses.replace(DEFAULT_KNOBS, section_bytes=base + 2, nvfp4_pingpong={}),
        "noop_not_deferred": dataclasses.replace(DEFAULT_KNOBS, section_bytes=base + 3, nvfp4_defer=False),
    }
    rows = []
    for b, h, s, d in CASES:
        name = f"b{b}_h{h}_s{s}_d{d}_causal"
        q, k, v, _ = make_inputs(torch, (b, h, h, s, s, d, True, (-1, -1), False))
        g = nvfp4.compute_global_scale(v)
        nvfp4_call = dict(causal=True, out_format="nvfp4", global_scale=g)
        calls = {
            "bf16": lambda: fmha.attention(q, k, v, causal=True),
            "fused": lambda: fmha.attention(q, k, v, **nvfp4_call),
        }
        for label, knobs in no_op_knobs.items():
            calls[label] = lambda knobs=knobs: fmha.attention_with_knobs(q, k, v, knobs=knobs, **nvfp4_call)
        calls["bf16"]()
        calls["fused"]()
        with quantization_traced_out():
            for label in no_op_knobs:
                calls[label]()  # traced and built here, without the quantization
        torch.cuda.synchronize()
        for round_ in range(args.rounds):
            ms = {label: time_ms(fn) for label, fn in calls.items()}
            row = {"case": name, "round": round_, **{label: round(t, 4) for label, t in ms.items()}}
            row.update({f"{label}/bf16": round(t / ms["bf16"], 3) for label, t in ms.items() if label != "bf16"})
            print(json.dumps(row), flush=True)
            rows.append(row)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "nvfp4_floor.json").write_text(json.dumps({"gpu": torch.cuda.get_device_name(), "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
