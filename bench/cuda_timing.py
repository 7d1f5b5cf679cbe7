"""Median CUDA-event time of a callable (`median_ms`), also of launches replayed from a CUDA graph
(`graph_ms`), and its GPU time alone, cold L2 and host cost hidden (`gpu_ms`): the timers the
GPU benchmarks share."""

from __future__ import annotations

import statistics


def samples_ms(fn, repeat: int = 20, iters: int = 1, warmup: int = 3) -> list[float]:
    """Milliseconds per call, one sample per `repeat` runs of `iters` back-to-back calls."""
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / iters)
    return samples


def median_ms(fn, repeat: int = 20, iters: int = 1, warmup: int = 3) -> float:
    """Median milliseconds per call over `repeat` samples of `iters` back-to-back calls."""
    return statistics.median(samples_ms(fn, repeat, iters, warmup))


def graph_ms(launch, launches: int = 200):
    """Milliseconds per launch of `launch` replayed from a CUDA graph of `launches` launches.

    None if capture fails (e.g. a launch that synchronizes); the reason is printed.
    """
    import torch

    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm up outside the capture (compiles, allocations)
            for _ in range(3):
                launch()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(launches):
                launch()
        return median_ms(graph.replay, repeat=7, iters=5) / launches
    except Exception as e:  # noqa: BLE001  (capture errors come as several types)
        print(f"CUDA graph capture failed: {type(e).__name__}: {e}", flush=True)
        return None


# gpu_ms: the L2 is flushed by writing FLUSH_BYTES before every call (the H200's L2 is 60 MB),
# then the GPU spins SPIN_CYCLES (~0.5 ms at 2 GHz), long enough for the host to run any
# implementation's Python and launch code before the GPU reaches the call: the start event
# fires when the spin ends, so the host's cost per call never shows in the time (it is
# measured apart, bench/host_cost.py). Without the spin, a call whose host side is slower
# than the GPU work queued ahead of it is timed with the GPU idle waiting for its launch:
# FA3's split-KV call measured 0.234 ms for a 0.05 ms kernel on one H200 host (that is
# what triton's do_bench did, with only its L2 flush ahead).
FLUSH_BYTES = 256 << 20
SPIN_CYCLES = 1_000_000


def gpu_ms(fn, budget_ms: float = 60.0, min_samples: int = 20, max_samples: int = 500, warmup: int = 5) -> float:
    """Median GPU milliseconds of one call of `fn`: cold L2, host cost hidden (see above).

    About `budget_ms` of the call's own time is sampled, between `min_samples` and `max_samples` calls.
    """
    import torch

    flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")

    def timed(n: int) -> list[float]:
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
        for start, end in events:
            flush.zero_()
            torch.cuda._sleep(SPIN_CYCLES)
            start.record()
            fn()
            end.record()
        torch.cuda.synchronize()
        return [start.elapsed_time(end) for start, end in events]

    estimate = statistics.median(timed(warmup))
    n = max(min_samples, min(max_samples, int(budget_ms / max(estimate, 1e-3))))
    return statistics.median(timed(n))

