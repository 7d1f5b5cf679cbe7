"""Kernels built on the toolkit: CuTeDSL kernels compiled through `cute_lowering.prelowering()`.

Floors, each importing only the ones below it (tests/test_layers.py reads them from the imports):
- the public API: `cute_lowering.kernels.fmha` (`attention`, the float64 reference) and `cute_lowering.kernels.nvfp4`
  (`quantize`, `dequantize`, `compute_global_scale`, `swizzle_scales`); they call
- `cute_lowering.kernels.ops`: the torch custom ops (`torch.ops.cute_lowering.*`) and the launch path, the
  only module that imports torch (the API imports it on first use: torch is optional);
- `cute_lowering.kernels.inputs`: the input rules of both;
- `cute_lowering.kernels.fmha_paths`: `compile_attention` over the FMHA paths;
- the kernel modules, kernels and their compile functions: `fmha_sm90` (the Hopper FMHA's
  planning and compile functions) over `fmha_sm90_split`, `fmha_sm90_kernel`, its mixins
  `fmha_sm90_schedule`, `fmha_sm90_softmax`, `fmha_sm90_epilogue`, and `fmha_sm90_parts`,
  `fmha_sm90_config` (a build's value), `fmha_sm90_knobs` (the knobs' value); `fmha_decode` (split-KV on mma.sync, the combine); `fmha_sm80` (the
  mma_sync FMHA); `nvfp4_kernels` (quantize, dequantize, amax, global scale);
- device helpers: `attention_parts` (softmax pieces, layouts, the NVFP4 tile epilogue), `exp2`
  (exp2 on the FMA units), `nvfp4_block` (NVFP4's block code), `cutedsl_compat`, `torch_device`,
  and `reference` (the numpy/ml_dtypes NVFP4 reference).
"""
