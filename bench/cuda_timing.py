"""Median CUDA-event time of a callable (`median_ms`), also of launches replayed from a CUDA graph
(`graph_ms`): the one timer the GPU benchmarks share."""

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
