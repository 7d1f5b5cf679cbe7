"""Session 18 check (H200): is out_format="nvfp4" still bit-identical to quantize(attention(...))
where the bf16 call takes a build the NVFP4 call does not (the wide-key tile from 8192 keys, the
tail split's pieces at 1x32x16384)?

    python bench/h200/fmha_sched/s18/nvfp4_identity.py     (staged machine, PYTHONPATH set)
"""
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[4]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]
import torch  # noqa: E402

from fmha_peers import make_inputs  # noqa: E402
from kernels import fmha, fmha_sm90, nvfp4, ops  # noqa: E402

SETTINGS = {
    "default": {},
    "wide192_pp": {"WIDE_KEY_TILES": {128: (128, 192)}, "WIDE_KEY_PINGPONG": True},
    "no_tail_split": {"TAIL_SPLIT": False},
}
CASES = [(4, 16, 4096, 128), (2, 16, 8192, 128), (1, 32, 16384, 128)]

if __name__ == "__main__":
    saved = {k: getattr(fmha_sm90, k) for s in SETTINGS.values() for k in s}
    for name, knobs in SETTINGS.items():
        for k, v in {**saved, **knobs}.items():
            setattr(fmha_sm90, k, v)
        ops.clear_launch_cache()
        for b, h, s, d in CASES:
            q, k, v, _ = make_inputs(torch, (b, h, h, s, s, d, False, (-1, -1), False))
            g = nvfp4.compute_global_scale(v)
            codes, scales, _ = fmha.attention(q, k, v, out_format="nvfp4", global_scale=g)
            out = fmha.attention(q, k, v)
            want_codes, want_scales, _ = nvfp4.quantize(out.reshape(-1, d), g)
            same = torch.equal(codes.reshape(-1, d // 2), want_codes) and torch.equal(
                scales.view(torch.uint8).reshape(-1, d // 16), want_scales.view(torch.uint8))
            print(name, f"{b}x{h}x{s}x{d}", "identical" if same else "DIFFERENT",
                  f"codes differing: {int((codes.reshape(-1, d // 2) != want_codes).sum())}", flush=True)
