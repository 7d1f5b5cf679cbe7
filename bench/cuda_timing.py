"""Median CUDA-event time of a callable: the one timer the GPU benchmarks share."""

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
