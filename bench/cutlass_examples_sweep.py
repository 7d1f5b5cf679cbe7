"""CUTLASS's own CuTeDSL examples, compiled without a GPU, for bench/check_collectives_sweep.py.

`builders(arch, root)` returns (name, build) pairs; `root` is `examples/python/CuTeDSL`
of an NVIDIA/cutlass checkout (read as files, never vendored here). Each adapter builds
what the example's own `run()` would hand `cute.compile`, with fake tensors and a fake
stream instead of torch tensors on a GPU, and the example's default configuration.
Only the examples whose target matches `arch` are built (Hopper: sm_90a; Blackwell: sm_100a).
"""

from __future__ import annotations

import importlib.util
import math
import os
import sys

M, N, K, L = 1024, 1024, 512, 1


def _load(root: str, relative: str):
    """Import one example file as a module (its folder on sys.path for its siblings)."""
    path = os.path.join(root, relative)
    folder = os.path.dirname(path)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    name = "cutlass_example_" + relative.replace("/", "_").removesuffix(".py")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _operands(dtype, c_dtype, m=M, n=N, k=K, l=L):
    """A (m,k,l) K-major, B (n,k,l) K-major, C (m,n,l) N-major, as fake tensors."""
    from cutlass.cute.runtime import make_fake_tensor

    a = make_fake_tensor(dtype, (m, k, l), (k, 1, m * k), assumed_align=16)
    b = make_fake_tensor(dtype, (n, k, l), (k, 1, n * k), assumed_align=16)
    c = make_fake_tensor(c_dtype, (m, n, l), (n, 1, m * n), assumed_align=16)
    return a, b, c


def hopper(root: str) -> list:
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_fake_stream

    f16, f32 = cutlass.Float16, cutlass.Float32

    def dense_gemm():
        example = _load(root, "cute/hopper/kernel/dense_gemm/dense_gemm.py")
        gemm = example.HopperWgmmaGemmKernel(f32, (128, 256), (1, 1))
        cute.compile(gemm, *_operands(f16, f16), make_fake_stream())

    def dense_gemm_persistent():
        example = _load(root, "cute/hopper/kernel/dense_gemm/dense_gemm_persistent.py")
        gemm = example.HopperWgmmaGemmPersistentKernel(f32, (128, 256), (1, 1), 1, True)
        cute.compile(gemm, *_operands(f16, f16), 132, make_fake_stream())

    def fmha(causal: bool):
        """The example's run(): (b, s, h_k, h_r, d) permuted to (s, d, h_r, h_k, b); torch
        CPU tensors stand in for the GPU ones (only their layout is compiled in)."""
        if root not in sys.path:
            sys.path.insert(0, root)  # `from helpers import fmha_helpers`
        example = _load(root, "cute/hopper/kernel/attention/fmha.py")
        import torch
        from cutlass.cute.runtime import from_dlpack

        def tensor(b, s, h_k, h_r, d, dtype, torch_dtype):
            t = torch.zeros((b, s, h_k, h_r, d), dtype=torch_dtype).permute(1, 4, 3, 2, 0)
            cute_tensor = from_dlpack(t, assumed_align=16)
            cute_tensor.element_type = dtype
            return cute_tensor.mark_layout_dynamic(leading_dim=1)

        b, s, h_k, d = 1, 1024, 4, 128
        q, k, v, o = (tensor(b, s, h_k, 1, d, f16, torch.float16) for _ in range(4))
        lse = tensor(b, s, h_k, 1, 1, f32, torch.float32)
        kernel = example.HopperFusedMultiHeadAttentionForward(f32, f32, (64, 128, d), False, example.fmha_utils.MaskEnum.WINDOW_MASK)
        scale = 1.0 / math.sqrt(d)
        right = cutlass.Int32(0) if causal else None
        cute.compile(kernel, q, k, v, o, lse, scale * 1.4426950408889634, scale, 1.0, None, right, make_fake_stream())

    return [
        ("cutlass_hopper_dense_gemm", dense_gemm), ("cutlass_hopper_dense_gemm_persistent", dense_gemm_persistent),
        ("cutlass_hopper_fmha", lambda: fmha(False)), ("cutlass_hopper_fmha_causal", lambda: fmha(True)),
    ]


def blackwell(root: str) -> list:
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_fake_stream

    f16, f32 = cutlass.Float16, cutlass.Float32

    def tutorial_fp16_gemm_0():
        example = _load(root, "cute/blackwell/tutorial/tutorial_gemm/fp16_gemm_0.py")
        from cutlass.cute.runtime import make_fake_tensor

        a = make_fake_tensor(f16, (M, K), (K, 1), assumed_align=16)
        b = make_fake_tensor(f16, (N, K), (K, 1), assumed_align=16)
        c = make_fake_tensor(f16, (M, N), (N, 1), assumed_align=16)
        cute.compile(example.host_function, a, b, c)

    def dense_gemm_persistent():
        example = _load(root, "cute/blackwell/kernel/dense_gemm/dense_gemm_persistent.py")
        a, b, c = _operands(f16, f16)
        example.compile_bmm.__wrapped__((M, N, K, L), a, b, c, f32, "k", "k", "n", (256, 256), (2, 1), 74, True, True)

    def blockscaled_gemm_persistent():
        example = _load(root, "cute/blackwell/kernel/blockscaled_gemm/dense_blockscaled_gemm_persistent.py")
        gemm = example.Sm100BlockScaledPersistentDenseGemmKernel(16, (128, 128), (1, 1))
        example.scaled_mm(
            gemm, cutlass.Float4E2M1FN, cutlass.Float4E2M1FN, f16, cutlass.Float8E4M3FN, "k", "k", "n", 148,
            make_fake_stream(),
        )  # fmt: skip

    def fmha(causal: bool):
        """The example's run(): contiguous (b, s, h_k, h_r, d) tensors, dynamic layouts; torch
        CPU tensors stand in for the GPU ones (only their layout is compiled in)."""
        if root not in sys.path:
            sys.path.insert(0, root)  # `from helpers import fmha_helpers`
        example = _load(root, "cute/blackwell/kernel/attention/fmha/fmha.py")
        import torch
        from cutlass.cute.runtime import from_dlpack

        def tensor(shape):
            return from_dlpack(torch.zeros(shape, dtype=torch.float16), assumed_align=32).mark_layout_dynamic()

        b, s, h, d = 1, 1024, 4, 128
        q, k, v, o = (tensor((b, s, h, 1, d)) for _ in range(4))
        kernel = example.BlackwellFusedMultiHeadAttentionForward(
            f32, f32, (128, 128), d, False, example.fmha_utils.MaskEnum.WINDOW_MASK, False, False, use_tma_store=True
        )
        scale = 1.0 / math.sqrt(d)
        right = cutlass.Int32(0) if causal else None
        cute.compile(
            kernel, q, k, v, o, (b, s, s, s, h, h, d, d), None, None, None, None, scale * math.log2(math.e), scale, 1.0,
            None, None, right, None, None, make_fake_stream(), False, options="--opt-level=2",
        )  # fmt: skip

    return [
        ("cutlass_blackwell_fmha", lambda: fmha(False)),
        ("cutlass_blackwell_fmha_causal", lambda: fmha(True)),
        ("cutlass_blackwell_tutorial_fp16_gemm_0", tutorial_fp16_gemm_0),
        ("cutlass_blackwell_dense_gemm_persistent", dense_gemm_persistent),
        ("cutlass_blackwell_blockscaled_gemm_persistent", blockscaled_gemm_persistent),
    ]


def builders(arch: str, root: str) -> list:
    return hopper(root) if arch == "sm_90a" else blackwell(root) if arch == "sm_100a" else []
