"""Kernels built on the toolkit: CuTeDSL kernels compiled through `lowering.prelowering()`.

`kernels.nvfp4`: NVFP4 quantize/dequantize (torch API, CuTeDSL kernels);
`kernels.reference`: their numpy/ml_dtypes reference;
`kernels.fmha`: FMHA forward (mma.sync path, torch API, float64 reference);
`kernels.ops`: the torch custom ops over them (`torch.ops.cute_lowering.*`) and the launch path.
"""
