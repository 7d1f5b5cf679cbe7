"""The CuTeDSL kernels of `quack-kernels` (PyPI, pinned 0.6.5), compiled without a GPU.

quack compiles every kernel from fake tensors (`cute.runtime.make_fake_tensor`), so
its own compile functions work on a CPU machine for any target; they sit behind
quack's in-memory and on-disk `.o` cache (`@jit_cache`), which `__wrapped__` skips.
They take the target from the DSL (`CUTE_DSL_ARCH`), not from an option.

`import quack` needs triton (quack/__init__ imports rmsnorm, which imports the
autotuner, which imports triton), and triton is a 286 MB wheel none of these
compiles use. Without triton, `import_quack()` imports the kernel modules without
running quack/__init__: it imports `quack.dsl` itself (the CuTe patches quack's
__init__ installs) and stands in for `quack.autotuner`, whose `@autotune` only wraps
the tuned torch entry points, never the compile functions used here.

`tests/quack_worker.py` compiles them with and without our hook, one process per arch.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
import types

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32
from cutlass.cute.runtime import make_fake_compact_tensor

QUACK_VERSION = "0.6.5"
ARCHS = ("sm_90a", "sm_100a")


def import_quack():
    """The `quack` package, importable on a machine with no triton (see the docstring)."""
    try:
        import triton  # noqa: F401
    except ImportError:
        pass
    else:
        return importlib.import_module("quack")
    if "quack" in sys.modules:
        return sys.modules["quack"]
    spec = importlib.util.find_spec("quack")
    if spec is None:
        raise ImportError("quack-kernels is not installed")
    package = importlib.util.module_from_spec(spec)  # quack/__init__ is not executed
    package.__version__ = QUACK_VERSION
    sys.modules["quack"] = package
    autotuner = types.ModuleType("quack.autotuner")
    autotuner.__doc__ = "Stand-in: quack's autotuner imports triton; compiles never tune."

    class AutotuneConfig:
        def __init__(self, **kwargs):
            self.__dict__.update(kwargs)

    def autotune(*_args, **_kwargs):
        return lambda fn: fn

    autotuner.AutotuneConfig, autotuner.autotune = AutotuneConfig, autotune
    sys.modules["quack.autotuner"] = autotuner
    try:
        importlib.import_module("quack.dsl")  # CuTe tensor indexing, .to/.clone, mixed constexpr if
    except BaseException:
        for name in [n for n in sys.modules if n == "quack" or n.startswith("quack.")]:
            del sys.modules[name]
        raise
    return package


# --- the kernels: name -> builder(arch) ------------------------------------------------
def _capability(arch: str) -> tuple[int, int]:
    number = int(re.match(r"sm_(\d+)", arch).group(1))  # sm_90a -> (9, 0), sm_100a -> (10, 0)
    return number // 10, number % 10


def _gemm(arch: str, d_dtype: str = "BFloat16", rounding: str = "RN"):
    """quack.gemm's compile (GemmDefaultSm90 on sm_90a, GemmDefaultSm100 on sm_100a):
    bf16 A/B (K-major), D N-major, quack's default tile and cluster for the arch,
    persistent; `rounding="RS"` is the stochastic-rounding epilogue of quack/rounding.py
    (software converters on sm_90a, hardware `cvt.rs` on sm_100a)."""
    import quack.gemm as gemm
    from quack.gemm_config import SplitKMode
    from quack.rounding import RoundingMode

    capability = _capability(arch)
    hopper = capability[0] == 9
    return gemm._compile_gemm.__wrapped__(
        cutlass.BFloat16, cutlass.BFloat16, getattr(cutlass, d_dtype), None,
        "k", "k", "n", None,
        (128, 192) if hopper else (256, 256), (2, 1, 1),
        pingpong=hopper, persistent=True, is_dynamic_persistent=not hopper,
        rowvec_dtype=None, colvec_dtype=None, colvec_ndim=0,
        alpha_mode=0, beta_mode=0, add_to_output=False, concat_layout=False,
        varlen_m=False, varlen_k=False, gather_A=False, use_tma_gather=False,
        has_batch_idx_permute=False, device_capacity=capability,
        rounding_mode=getattr(RoundingMode, rounding), sr_seed_mode=2 if rounding == "RS" else 0,
        num_warps=None, split_k=1, split_k_mode=SplitKMode.SERIAL,
    )


def _stochastic_rounding(arch: str, dtype: str):
    """quack.rounding.convert_f32_frag_sr (Philox + inline-asm converters, FP4 included)
    in a minimal kernel: 16 f32 per thread to `dtype`."""
    from quack.rounding import convert_f32_frag_sr

    destination = getattr(cutlass, dtype)

    @cute.kernel
    def sr_kernel(src: cute.Tensor, dst: cute.Tensor, seed: Int32):
        tidx, _, _ = cute.arch.thread_idx()
        tile = cute.local_tile(src, (16,), (tidx,))
        frag = cute.make_rmem_tensor_like(tile)
        frag.store(tile.load())
        cute.local_tile(dst, (16,), (tidx,)).store(convert_f32_frag_sr(frag, destination, seed, tidx).load())

    @cute.jit
    def sr_launch(src: cute.Tensor, dst: cute.Tensor, seed: Int32):
        sr_kernel(src, dst, seed).launch(grid=(1, 1, 1), block=(64, 1, 1))

    return cute.compile(
        sr_launch, make_fake_compact_tensor(Float32, (1024,)), make_fake_compact_tensor(destination, (1024,)), Int32(0)
    )



def builders() -> dict:
    """name -> builder(arch); call `import_quack()` first. `arch` must be the DSL's own
    target (CUTE_DSL_ARCH): quack's compile functions read the target from the DSL."""
    import quack.cross_entropy as cross_entropy
    import quack.rmsnorm as rmsnorm
    import quack.rotary as rotary
    import quack.softmax as softmax
    import quack.topk as topk

    bf16, f32, i32 = cutlass.BFloat16, cutlass.Float32, cutlass.Int32
    return {
        "softmax_fwd": lambda arch: softmax.Softmax.compile.__wrapped__(bf16, bf16, 4096),
        "softmax_bwd": lambda arch: softmax.SoftmaxBackward.compile.__wrapped__(bf16, bf16, bf16, 4096),
        "rmsnorm_fwd": lambda arch: rmsnorm._compile_rmsnorm_fwd.__wrapped__(
            bf16, bf16, None, f32, None, None, 4096, True, False, False, False
        ),
        "rmsnorm_bwd": lambda arch: rmsnorm._compile_rmsnorm_bwd.__wrapped__(
            4096, bf16, bf16, bf16, f32, False, None, None, True
        ),
        "cross_entropy_fwd": lambda arch: cross_entropy.CrossEntropy.compile.__wrapped__(
            bf16, i32, None, 32768, True, False, None, 1
        ),
        "cross_entropy_bwd": lambda arch: cross_entropy.CrossEntropyBackward.compile.__wrapped__(
            bf16, i32, 32768, None
        ),
        "rotary": lambda arch: rotary.RotaryKernel.compile.__wrapped__(bf16, f32, None, None, 128, False, False),
        "topk_fwd": lambda arch: topk.TopK.compile.__wrapped__(bf16, 4096, 16, False),
        "topk_bwd": lambda arch: topk.TopKBackward.compile.__wrapped__(bf16, bf16, bf16, 4096, 16, False),
        "gemm_bf16": lambda arch: _gemm(arch),
        "gemm_fp4_out_rn": lambda arch: _gemm(arch, "Float4E2M1FN", "RN"),
        "gemm_fp4_out_sr": lambda arch: _gemm(arch, "Float4E2M1FN", "RS"),
        "sr_bf16": lambda arch: _stochastic_rounding(arch, "BFloat16"),
        "sr_e4m3": lambda arch: _stochastic_rounding(arch, "Float8E4M3FN"),
        "sr_e2m1": lambda arch: _stochastic_rounding(arch, "Float4E2M1FN"),
    }


KERNELS = (
    "softmax_fwd", "softmax_bwd", "rmsnorm_fwd", "rmsnorm_bwd", "cross_entropy_fwd", "cross_entropy_bwd",
    "rotary", "topk_fwd", "topk_bwd", "gemm_bf16", "gemm_fp4_out_rn", "gemm_fp4_out_sr",
    "sr_bf16", "sr_e4m3", "sr_e2m1",
)  # fmt: skip
