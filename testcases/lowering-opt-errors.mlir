// Bad input gets a located diagnostic and exit code 1: never a traceback.

// RUN: not lowering-opt %S/Inputs/conversions.mlir -p 'builtin.module(fptosi-to-ptx{rounding=nearest})' 2>&1 | filecheck %s --check-prefix=BADVALUE
// BADVALUE: <pass-pipeline>:1:16: error: invalid value 'nearest' for option 'rounding': expected one of auto, rzi, rni, rmi, rpi
// BADVALUE-NEXT: builtin.module(fptosi-to-ptx{rounding=nearest})
// BADVALUE-NEXT: {{^               \^$}}
// BADVALUE-NOT: Traceback

// RUN: not lowering-opt %S/Inputs/conversions.mlir -p 'builtin.module(fptosi-to-ptx{speed=11})' 2>&1 | filecheck %s --check-prefix=BADOPTION
// BADOPTION: <pass-pipeline>:1:16: error: pass 'fptosi-to-ptx' has no option 'speed' (options: rounding, emit)

// An option given twice is an error at its second use (MLIR's own options refuse it too).
// RUN: not lowering-opt %S/Inputs/conversions.mlir -p 'builtin.module(fptosi-to-ptx{rounding=rni rounding=rmi})' 2>&1 | filecheck %s --check-prefix=TWICE
// TWICE: <pass-pipeline>:1:43: error: option 'rounding' of 'fptosi-to-ptx' given twice (rounding=rni, then rounding=rmi)
// TWICE-NEXT: builtin.module(fptosi-to-ptx{rounding=rni rounding=rmi})
// TWICE-NEXT: {{^                                          \^$}}

// RUN: not lowering-opt %S/Inputs/conversions.mlir -p 'builtin.module(fptosi-to-ptx,canonicalise)' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// UNKNOWN: <pass-pipeline>:1:30: error: 'canonicalise' does not refer to a registered pass or pass pipeline

// RUN: not lowering-opt %S/Inputs/conversions.mlir -p 'builtin.module(canonicalize{max-iterations=many})' 2>&1 | filecheck %s --check-prefix=MLIROPTION
// MLIROPTION: <pass-pipeline>:1:16: error:
// MLIROPTION-NOT: Traceback

// RUN: not lowering-opt %S/Inputs/conversions.mlir -p 'builtin.module(func.func(fptosi-to-ptx))' 2>&1 | filecheck %s --check-prefix=NESTED
// NESTED: <pass-pipeline>:1:26: error: pass 'fptosi-to-ptx' walks the whole module itself: put it at the top level of the pipeline, not inside 'func.func(...)'

// RUN: not lowering-opt %S/Inputs/conversions.mlir -p 'builtin.module(fptosi-to-ptx' 2>&1 | filecheck %s --check-prefix=SYNTAX
// SYNTAX: <pass-pipeline>:1:29: error: expected ',' or ')'

// RUN: not lowering-opt %S/does-not-exist.mlir 2>&1 | filecheck %s --check-prefix=MISSING
// MISSING: error: cannot read '{{.*}}does-not-exist.mlir': No such file or directory

// Malformed IR: the error points into the file; with --split-input-file the other
// chunks are still processed and the line is the line in the whole file.
// RUN: not lowering-opt %s --split-input-file -p 'builtin.module(fptosi-to-ptx)' 2>&1 | filecheck %s --check-prefix=MALFORMED
// MALFORMED: lowering-opt-errors.mlir:[[# @LINE + 6]]:8: error: custom op 'arith.fptosy' is unknown
// MALFORMED-NEXT: {{^}}  %0 = arith.fptosy %x : f32 to i32
// MALFORMED-NEXT: {{^       \^$}}
// MALFORMED: func.func @good
// MALFORMED-NEXT: llvm.inline_asm "cvt.rzi.s32.f32
func.func @bad(%x: f32) -> i32 {
  %0 = arith.fptosy %x : f32 to i32
  return %0 : i32
}

// -----
func.func @good(%x: f32) -> i32 {
  %0 = arith.fptosi %x : f32 to i32
  return %0 : i32
}

// -----
// An op that fails the verifier is reported where it is.
// RUN: not lowering-opt %s --split-input-file 2>&1 | filecheck %s --check-prefix=VERIFY
// VERIFY: lowering-opt-errors.mlir:[[# @LINE + 2]]:8: error: 'arith.fptosi' op requires the same shape for all operands and results
func.func @mismatch(%x: vector<2xf32>) -> vector<3xi32> {
  %0 = "arith.fptosi"(%x) : (vector<2xf32>) -> vector<3xi32>
  return %0 : vector<3xi32>
}
