// wgmma-report on real post-stage dumps: the modules CuTeDSL's cute-to-nvvm{llvm-only=true}
// leaves (CUTE_LOWERING_DUMP's *.post.mlir), cut by tests/trim_post_dump.py to the kernel
// that issues the wgmmas and gzipped. fmha128: our wgmma FMHA (kernels/fmha_sm90.py, bf16,
// D=128, no mask, sm_90a); cutlass-hopper-dense-gemm: CUTLASS's Hopper dense_gemm.py example
// (bench/cutlass_examples_sweep.py's configuration), both compiled with CuTeDSL 4.8.1.

// Our attention kernel: S = Q K^T from shared memory (2 descriptors a wgmma), P V with A from registers;
// CuTeDSL steps along K with 64-bit adds (add.s64), the first of each group has the stage offset
// on the low word.
// RUN: gunzip -c %S/Inputs/fmha128-sm90a.post.mlir.gz | lowering-opt - -p 'builtin.module(wgmma-report)' --statistics 2>&1 >/dev/null | filecheck %s --check-prefix=FMHA
// FMHA: <stdin>:973:14: remark: wgmma-report: group of 8 wgmma m64n128k16 (A and B from shared memory): descriptors add64 14, low32 2, other 0
// FMHA: <stdin>:3967:15: remark: wgmma-report: group of 8 wgmma m64n128k16 (A and B from shared memory): descriptors add64 14, low32 2, other 0
// FMHA: <stdin>:5670:15: remark: wgmma-report: group of 8 wgmma m64n128k16 (A from registers): descriptors add64 7, low32 1, other 0
// FMHA: <stdin>:7849:15: remark: wgmma-report: group of 8 wgmma m64n128k16 (A from registers): descriptors add64 7, low32 1, other 0
// FMHA: 'wgmma-report'
// FMHA-NEXT: (S) 32 wgmma - wgmma.mma_async ops
// FMHA-NEXT: (S) 4 groups
// FMHA-NEXT: (S) 42 add64
// FMHA-NEXT: (S) 6 low32
// FMHA-NEXT: (S) 0 other

// CUTLASS example issues one wgmma a k-block, in a loop: its descriptors carry the offset on the low word.
// RUN: gunzip -c %S/Inputs/cutlass-hopper-dense-gemm-sm90a.post.mlir.gz | lowering-opt - -p 'builtin.module(wgmma-report)' 2>&1 >/dev/null | filecheck %s --check-prefix=GEMM
// GEMM: <stdin>:578:14: remark: wgmma-report: group of 1 wgmma m64n256k16 (A and B from shared memory): descriptors add64 0, low32 2, other 0
// GEMM: <stdin>:1002:14: remark: wgmma-report: group of 1 wgmma m64n256k16 (A and B from shared memory): descriptors add64 0, low32 2, other 0

// A report pass: the IR comes back as it went in.
// RUN: gunzip -c %S/Inputs/fmha128-sm90a.post.mlir.gz | lowering-opt - > %t.plain
// RUN: gunzip -c %S/Inputs/fmha128-sm90a.post.mlir.gz | lowering-opt - -p 'builtin.module(wgmma-report)' 2>/dev/null > %t.reported
// RUN: cmp %t.plain %t.reported

// On a module without wgmmas (here the pre-stage input of another test) it reports nothing.
// RUN: lowering-opt %S/Inputs/conversions.mlir -p 'builtin.module(wgmma-report)' --statistics 2>&1 >/dev/null | filecheck %s --check-prefix=NONE
// NONE-NOT: remark
// NONE: (S) 0 wgmma
