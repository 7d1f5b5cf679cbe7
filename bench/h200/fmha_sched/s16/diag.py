"""Session 16 diagnostic (H200): where O_DIRECT's 5% goes once its key loop equals the default's.

    python bench/h200/fmha_sched/s16/diag.py     (staged machine, PYTHONPATH set)

Times, on 2x16x8192x128 and 4x16x4096x128 (bf16, no mask), the default build, O_DIRECT, and
O_DIRECT whose stores are skipped at run time (a row bound no row meets: the same shuffles and
branches, no global writes).
"""
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[4]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]
import torch  # noqa: E402

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
from fmha_peers import ISSUE_CASES, make_inputs, score_pairs, time_ms  # noqa: E402
from kernels import fmha, fmha_sm90, ops  # noqa: E402

original_direct = fmha_sm90._FmhaSm90.direct_epilogue


@cute.jit
def _skip_stores(self, rO, tScS, mO, mma_pv, ct, m0, head, batch):
    # direct_epilogue's shuffles and stores, under a row bound no row meets (known at run time
    # only, so the code stays): what the epilogue costs without its global writes
    gO = mO[None, None, head, batch]
    t = ct % 4
    odd, upper = (t & 1) == 1, (t & 2) == 2
    words_mn = fmha_sm90._mn_view(cute.recast_tensor(rO, cutlass.Int32))
    for r in cutlass.range_constexpr(cute.size(words_mn.shape[0])):
        row = m0 + tScS[r, 0][0]
        for kk in cutlass.range_constexpr(self.d // 32):
            m = [words_mn[r, 4 * kk + i] for i in range(4)]
            for j in (0, 2):
                got = cute.arch.shuffle_sync_bfly(cutlass.select_(odd, m[j], m[j + 1]), offset=1)
                m[j], m[j + 1] = cutlass.select_(odd, got, m[j]), cutlass.select_(odd, m[j + 1], got)
            for j in (0, 1):
                got = cute.arch.shuffle_sync_bfly(cutlass.select_(upper, m[j], m[j + 2]), offset=2)
                m[j], m[j + 2] = cutlass.select_(upper, got, m[j]), cutlass.select_(upper, m[j + 2], got)
            if row < mO.shape[0] - (1 << 30):
                vals = cute.make_rmem_tensor((4,), cutlass.Int32)
                for i in cutlass.range_constexpr(4):
                    vals[i] = m[i]
                dst = cute.recast_tensor(cute.local_tile(gO, (1, 8), (row, 4 * kk + t)), cutlass.Int32)
                cute.autovec_copy(vals, cute.make_tensor(dst.iterator, cute.make_layout(4)))


def setting(name):
    ops.clear_launch_cache()
    fmha_sm90._compile.cache_clear()
    fmha_sm90.O_DIRECT = name != "now"
    fmha_sm90._FmhaSm90.direct_epilogue = _skip_stores if name == "o_direct_no_stores" else original_direct


if __name__ == "__main__":
    for name in ("now", "o_direct", "o_direct_no_stores"):
        setting(name)
        for case in (ISSUE_CASES[2], ISSUE_CASES[0]):
            b, h, hkv, sq, sk, d, causal, window, sink = case
            q, k, v, sinks = make_inputs(torch, case)
            try:
                ms = time_ms(lambda: fmha.attention(q, k, v, causal=causal, window=window, sink=sinks))
                print(name, f"{b}x{h}x{sk}x{d}", round(4 * b * h * d * score_pairs(sq, sk, causal, window) / ms / 1e9, 1), flush=True)
            except Exception as e:  # noqa: BLE001
                print(name, "failed", type(e).__name__, str(e)[:300], flush=True)
