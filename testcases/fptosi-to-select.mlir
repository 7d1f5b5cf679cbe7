// RUN: lowering-opt %s --split-input-file -p 'builtin.module(fptosi-to-select)' 2>/dev/null | filecheck %s
// RUN: lowering-opt %s --split-input-file -p 'builtin.module(fptosi-to-select)' 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK
// RUN: lowering-opt %s --split-input-file -p 'builtin.module(fptosi-to-select{min=-1 max=1.5})' 2>/dev/null | filecheck %s --check-prefix=OPTS
// RUN: lowering-opt %s --split-input-file -p 'builtin.module(fptosi-to-select{rounding=rne})' 2>/dev/null | filecheck %s --check-prefix=RNE
// RUN: lowering-opt %s --split-input-file -p 'builtin.module(fptosi-to-select{rounding=rz})' 2>/dev/null | filecheck %s --check-prefix=RZ
// RUN: lowering-opt %s --split-input-file -p 'builtin.module(fptosi-to-select{rounding=rz})' 2>&1 >/dev/null | filecheck %s --check-prefix=RZREMARK
// RUN: lowering-opt %s --split-input-file -p 'builtin.module(fptosi-to-select{max-thresholds=2})' 2>/dev/null | filecheck %s --check-prefix=CAP
// min above max promises nothing can come in: the pipeline is wrong (exit 1), whatever the IR.
// RUN: not lowering-opt %s --split-input-file -p 'builtin.module(fptosi-to-select{min=3 max=-3})' 2>&1 >/dev/null | filecheck %s --check-prefix=EMPTY
// EMPTY: <pass-pipeline>:1:16: error: option min=3 is above max=-3: no input can keep that promise
// EMPTY-NOT: remark
// RUN: lowering-opt %s --split-input-file -p 'builtin.module(fptosi-to-select)' --statistics 2>&1 >/dev/null | filecheck %s --check-prefix=STATS

// Bad option values are located errors (exit code 1).
// RUN: not lowering-opt %s -p 'builtin.module(fptosi-to-select{max=seven})' 2>&1 | filecheck %s --check-prefix=BADMAX
// BADMAX: <pass-pipeline>:1:16: error: invalid value 'seven' for option 'max': expected a finite number (like -8, 7.5 or 1e3)
// RUN: not lowering-opt %s -p 'builtin.module(fptosi-to-select{min=-inf})' 2>&1 | filecheck %s --check-prefix=BADMIN
// BADMIN: <pass-pipeline>:1:16: error: invalid value '-inf' for option 'min': expected a finite number
// RUN: not lowering-opt %s -p 'builtin.module(fptosi-to-select{max-thresholds=-1})' 2>&1 | filecheck %s --check-prefix=BADCAP
// BADCAP: <pass-pipeline>:1:16: error: invalid value '-1' for option 'max-thresholds': expected a non-negative integer
// RUN: not lowering-opt %s -p 'builtin.module(fptosi-to-select{rounding=rni})' 2>&1 | filecheck %s --check-prefix=BADROUND
// BADROUND: <pass-pipeline>:1:16: error: invalid value 'rni' for option 'rounding': expected one of auto, rne, rz

// STATS: 'fptosi-to-select'
// STATS-NEXT: (S) 10 rewritten - ops rewritten
// STATS-NEXT: (S) 10 left - ops left as they were (each has a remark)
// STATS-NEXT: (S) 6 folded - roundeven ops folded into the thresholds
// STATS-NEXT: (S) 48 thresholds - compare + select pairs emitted

// What cute.math.clamp + roundeven trace to (minnumf then maxnumf with the bound
// first): round half to even, so the ties alternate between ogt and oge. minnumf
// turns NaN into 1.0, whose result (1) the last compare carries by being unordered.
// CHECK-LABEL: func.func @clamp_roundeven
// CHECK-DAG: %[[LO:.*]] = arith.constant -2 : i32
// CHECK-DAG: %[[T0:.*]] = arith.constant -1.500000e+00 : f32
// CHECK: %[[P0:.*]] = arith.cmpf ogt, %arg0, %[[T0]] : f32
// CHECK: %[[C0:.*]] = arith.constant -1 : i32
// CHECK: %[[S0:.*]] = arith.select %[[P0]], %[[C0]], %[[LO]] : i32
// CHECK: %[[T1:.*]] = arith.constant -5.000000e-01 : f32
// CHECK: %[[P1:.*]] = arith.cmpf oge, %arg0, %[[T1]] : f32
// CHECK: %[[C1:.*]] = arith.constant 0 : i32
// CHECK: %[[S1:.*]] = arith.select %[[P1]], %[[C1]], %[[S0]] : i32
// CHECK: %[[T2:.*]] = arith.constant 5.000000e-01 : f32
// CHECK: %[[P2:.*]] = arith.cmpf ugt, %arg0, %[[T2]] : f32
// CHECK: %[[C2:.*]] = arith.constant 1 : i32
// CHECK: %[[S2:.*]] = arith.select %[[P2]], %[[C2]], %[[S1]] : i32
// CHECK-NOT: arith.minnumf
// CHECK-NOT: arith.maxnumf
// CHECK-NOT: math.roundeven
// CHECK-NOT: arith.fptosi
// CHECK: return %[[S2]] : i32
// RNE-LABEL: func.func @clamp_roundeven
// RNE-NOT: arith.fptosi
// RNE: return
// RZ-LABEL: func.func @clamp_roundeven
// RZ: arith.fptosi
// CAP-LABEL: func.func @clamp_roundeven
// CAP: arith.fptosi
func.func @clamp_roundeven(%x: f32) -> i32 {
  %c1 = arith.constant 1.0 : f32
  %cm2 = arith.constant -2.0 : f32
  %m = arith.minnumf %x, %c1 : f32
  %c = arith.maxnumf %cm2, %m : f32
  %r = math.roundeven %c : f32
  %i = arith.fptosi %r : f32 to i32
  return %i : i32
}

// -----
// The other order (max first, then min), truncation: result k for x in [k, k+1)
// above zero and (k-1, k] below it. maxnumf turns NaN into -2.0, the lowest
// result: every compare stays ordered.
// CHECK-LABEL: func.func @clamp_truncate
// CHECK: arith.constant -2 : i32
// CHECK: arith.cmpf ogt, %arg0, %{{.*}} : f32
// CHECK: arith.constant -1 : i32
// CHECK: arith.cmpf ogt, %arg0, %{{.*}} : f32
// CHECK: arith.constant 0 : i32
// CHECK: arith.cmpf oge, %arg0, %{{.*}} : f32
// CHECK: arith.constant 1 : i32
// CHECK: arith.constant 2.000000e+00 : f32
// CHECK: arith.cmpf oge, %arg0, %{{.*}} : f32
// CHECK: arith.constant 2 : i32
// CHECK-NOT: arith.cmpf u
// CHECK-NOT: arith.fptosi
// With the options' promise [-1, 1.5] on %x intersected, two thresholds remain;
// NaN passes the promise and maxnumf still makes it -2, now below the range.
// OPTS-LABEL: func.func @clamp_truncate
// OPTS: %[[LO:.*]] = arith.constant -1 : i32
// OPTS: %[[A:.*]] = arith.cmpf ogt, %arg0, %{{.*}} : f32
// OPTS: %[[R:.*]] = arith.select %[[A]], %{{.*}}, %[[LO]] : i32
// OPTS: arith.cmpf oge, %arg0, %{{.*}} : f32
// OPTS: arith.constant 1 : i32
// OPTS: arith.cmpf uno, %arg0, %arg0 : f32
// OPTS-NEXT: arith.constant -2 : i32
// OPTS-NOT: arith.cmpf
// OPTS: return
// RZ-LABEL: func.func @clamp_truncate
// RZ-NOT: arith.fptosi
// RZ: return
// RNE-LABEL: func.func @clamp_truncate
// RNE: arith.fptosi
func.func @clamp_truncate(%x: f32) -> i32 {
  %cm2 = arith.constant -2.0 : f32
  %c2 = arith.constant 2.0 : f32
  %m = arith.maxnumf %x, %cm2 : f32
  %c = arith.minnumf %c2, %m : f32
  %i = arith.fptosi %c : f32 to i32
  return %i : i32
}

// -----
// minimumf/maximumf (Python's min/max on CuTeDSL values) propagate NaN: the
// conversion is poison for it, and the all-ordered chain gives the lowest result.
// CHECK-LABEL: func.func @propagating_clamp
// CHECK: arith.constant 0 : i16
// CHECK-COUNT-3: arith.cmpf o
// CHECK-NOT: arith.cmpf
// CHECK-NOT: arith.minimumf
// CHECK-NOT: arith.fptosi
func.func @propagating_clamp(%x: f32) -> i16 {
  %c3 = arith.constant 3.5 : f32
  %c0 = arith.constant 0.0 : f32
  %m = arith.minimumf %x, %c3 : f32
  %c = arith.maximumf %m, %c0 : f32
  %i = arith.fptosi %c : f32 to i16
  return %i : i16
}

// -----
// roundeven before the clamp, unsigned i8, f16 source: 1 is odd (x > 0.5),
// 2 even (x >= 1.5), 3 odd (x > 2.5).
// CHECK-LABEL: func.func @roundeven_then_clamp_unsigned
// CHECK: arith.constant 0 : i8
// CHECK: %[[T0:.*]] = arith.constant 5.000000e-01 : f16
// CHECK: arith.cmpf ogt, %arg0, %[[T0]] : f16
// CHECK: %[[T1:.*]] = arith.constant 1.500000e+00 : f16
// CHECK: arith.cmpf oge, %arg0, %[[T1]] : f16
// CHECK: %[[T2:.*]] = arith.constant 2.500000e+00 : f16
// CHECK: arith.cmpf ogt, %arg0, %[[T2]] : f16
// CHECK: arith.constant 3 : i8
// CHECK-NOT: math.roundeven
// CHECK-NOT: arith.fptoui
// With rounding=rz the roundeven is not folded: the compares read it, truncating.
// RZ-LABEL: func.func @roundeven_then_clamp_unsigned
// RZ: %[[R:.*]] = math.roundeven %arg0 : f16
// RZ: arith.cmpf oge, %[[R]], %{{.*}} : f16
// RZ-NOT: arith.fptoui
// RZ: return
func.func @roundeven_then_clamp_unsigned(%x: f16) -> i8 {
  %r = math.roundeven %x : f16
  %c3 = arith.constant 3.0 : f16
  %c0 = arith.constant 0.0 : f16
  %m = arith.minimumf %r, %c3 : f16
  %c = arith.maximumf %c0, %m : f16
  %i = arith.fptoui %c : f16 to i8
  return %i : i8
}

// -----
// cute.arch.fmin/fmax emit nvvm.fmin/fmax (NaN-quiet without `nan`): NaN becomes
// 7.0 here, the highest result, so the last compare is unordered.
// CHECK-LABEL: func.func @nvvm_clamp
// CHECK: arith.constant -8 : i32
// CHECK: arith.cmpf ogt, %arg0, %{{.*}} : f32
// CHECK-COUNT-13: arith.cmpf o
// CHECK: arith.cmpf ugt, %arg0, %{{.*}} : f32
// CHECK-NEXT: arith.constant 7 : i32
// CHECK-NOT: nvvm.fm
// CHECK-NOT: arith.fptosi
func.func @nvvm_clamp(%x: f32) -> i32 {
  %c7 = arith.constant 7.0 : f32
  %cm8 = arith.constant -8.0 : f32
  %m = nvvm.fmin %x, %c7
  %c = nvvm.fmax %m, %cm8
  %r = llvm.intr.roundeven(%c) : (f32) -> f32
  %i = arith.fptosi %r : f32 to i32
  return %i : i32
}

// -----
// Vectors: TensorSSA clamps with vector.broadcast bounds, dense splat constants
// too; the compares and selects work on the whole vector.
// CHECK-LABEL: func.func @vector
// CHECK: arith.constant dense<-2> : vector<4xi8>
// CHECK: %[[T:.*]] = arith.constant dense<-1.500000e+00> : vector<4xf32>
// CHECK: arith.cmpf ogt, %arg0, %[[T]] : vector<4xf32>
// CHECK: arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<4xi1>, vector<4xi8>
// CHECK-NOT: vector.extract
// CHECK-NOT: arith.fptosi
func.func @vector(%v: vector<4xf32>) -> vector<4xi8> {
  %s = arith.constant 1.0 : f32
  %lo = arith.constant dense<-2.0> : vector<4xf32>
  %hi = vector.broadcast %s : f32 to vector<4xf32>
  %m = arith.minnumf %v, %hi : vector<4xf32>
  %c = arith.maxnumf %lo, %m : vector<4xf32>
  %r = math.roundeven %c : vector<4xf32>
  %i = arith.fptosi %r : vector<4xf32> to vector<4xi8>
  return %i : vector<4xi8>
}

// -----
// bf16 holds only even integers in [256, 512): x >= 257 is x >= 258 over bf16
// values, so 257 is never a result and results 256 -> 258 share one threshold.
// CHECK-LABEL: func.func @bf16_merged_thresholds
// CHECK: arith.constant 250 : i32
// CHECK: arith.constant 2.560000e+02 : bf16
// CHECK-NEXT: arith.cmpf oge
// CHECK-NEXT: arith.constant 256 : i32
// CHECK: arith.constant 2.580000e+02 : bf16
// CHECK-NEXT: arith.cmpf oge
// CHECK-NEXT: arith.constant 258 : i32
// CHECK: arith.constant 2.600000e+02 : bf16
// CHECK-NEXT: arith.cmpf oge
// CHECK-NEXT: arith.constant 260 : i32
// CHECK-NOT: arith.fptosi
func.func @bf16_merged_thresholds(%x: bf16) -> i32 {
  %lo = arith.constant 250.0 : bf16
  %hi = arith.constant 260.0 : bf16
  %m = arith.maximumf %x, %lo : bf16
  %c = arith.minimumf %m, %hi : bf16
  %i = arith.fptosi %c : bf16 to i32
  return %i : i32
}

// -----
// A clamp with another user stays for it; the compares still read its input.
// (minnumf first: NaN becomes 1.0, result 1: the compare is unordered.)
// CHECK-LABEL: func.func @shared_clamp
// CHECK: %[[M:.*]] = arith.minnumf %arg0, %{{.*}} : f32
// CHECK: %[[C:.*]] = arith.maxnumf %[[M]], %{{.*}} : f32
// CHECK: arith.cmpf uge, %arg0, %{{.*}} : f32
// CHECK-NOT: arith.fptosi
// CHECK: return %{{.*}}, %[[C]] : i64, f32
func.func @shared_clamp(%x: f32) -> (i64, f32) {
  %c1 = arith.constant 1.0 : f32
  %c0 = arith.constant 0.0 : f32
  %m = arith.minnumf %x, %c1 : f32
  %c = arith.maxnumf %m, %c0 : f32
  %i = arith.fptosi %c : f32 to i64
  return %i, %c : i64, f32
}

// -----
// Contrived, but exact: NaN passes minimumf, becomes 2.6 at minnumf, and rounds
// to 3, a result no number reaches (they stop at 2.2 -> 2). No threshold can
// carry it, so one `cmpf uno` + select at the end does.
// CHECK-LABEL: func.func @nan_beyond_the_range
// CHECK: arith.constant 0 : i32
// CHECK: arith.cmpf ogt, %arg0
// CHECK: arith.cmpf oge, %arg0
// CHECK: %[[R:.*]] = arith.select
// CHECK: %[[NAN:.*]] = arith.cmpf uno, %arg0, %arg0 : f32
// CHECK-NEXT: %[[C3:.*]] = arith.constant 3 : i32
// CHECK-NEXT: %[[S:.*]] = arith.select %[[NAN]], %[[C3]], %[[R]] : i32
// CHECK-NEXT: return %[[S]]
func.func @nan_beyond_the_range(%x: f32) -> i32 {
  %a = arith.constant 2.2 : f32
  %b = arith.constant 2.6 : f32
  %c0 = arith.constant 0.0 : f32
  %m = arith.minimumf %x, %a : f32
  %n = arith.minnumf %m, %b : f32
  %c = arith.maxnumf %n, %c0 : f32
  %r = math.roundeven %c : f32
  %i = arith.fptosi %r : f32 to i32
  return %i : i32
}

// -----
// Only the options bound this conversion: without them it is left (REMARK below);
// with min=-1 max=1.5 it truncates to -1, 0 or 1, saturating outside.
// OPTS-LABEL: func.func @options_only
// OPTS: %[[LO:.*]] = arith.constant -1 : i32
// OPTS: %[[T0:.*]] = arith.constant -1.000000e+00 : f32
// OPTS: arith.cmpf ogt, %arg0, %[[T0]] : f32
// OPTS: %[[T1:.*]] = arith.constant 1.000000e+00 : f32
// OPTS: arith.cmpf oge, %arg0, %[[T1]] : f32
// OPTS-NOT: arith.fptosi
// OPTS: return
// REMARK: fptosi-to-select.mlir:[[# @LINE + 3]]:8: remark: fptosi-to-select: left 'arith.fptosi' as it is: the range is unbounded below
// CHECK-LABEL: func.func @options_only
func.func @options_only(%x: f32) -> i32 {
  %i = arith.fptosi %x : f32 to i32
  return %i : i32
}

// -----
// Left alone, each with a located remark.
// REMARK: fptosi-to-select.mlir:[[# @LINE + 50]]:8: remark: fptosi-to-select: left 'arith.fptosi' as it is: the range is unbounded above
// REMARK: fptosi-to-select.mlir:[[# @LINE + 50]]:8: remark: fptosi-to-select: left 'arith.fptosi' as it is: the range is unbounded below: the bound of 'arith.maxnumf' is not a constant (scalar or splat)
// REMARK: fptosi-to-select.mlir:[[# @LINE + 50]]:8: remark: fptosi-to-select: left 'arith.fptosi' as it is: results -200..200 do not fit the destination (i8)
// REMARK: fptosi-to-select.mlir:[[# @LINE + 50]]:8: remark: fptosi-to-select: left 'arith.fptoui' as it is: fptoui of results -3..3: negative results are poison
// REMARK: fptosi-to-select.mlir:[[# @LINE + 50]]:8: remark: fptosi-to-select: left 'arith.fptosi' as it is: results 0..100 need more than max-thresholds=16 thresholds
// REMARK: fptosi-to-select.mlir:[[# @LINE + 50]]:8: remark: fptosi-to-select: left 'arith.fptosi' as it is: a clamp bound is NaN
// REMARK: fptosi-to-select.mlir:[[# @LINE + 50]]:8: remark: fptosi-to-select: left 'arith.fptosi' as it is: the range is unbounded below (a clamp bound is infinite)
// REMARK: fptosi-to-select.mlir:[[# @LINE + 50]]:8: remark: fptosi-to-select: left 'arith.fptosi' as it is: the range is unbounded above: the bound of 'arith.minnumf' is not a constant (scalar or splat)
// REMARK: fptosi-to-select.mlir:[[# @LINE + 50]]:8: remark: fptosi-to-select: left 'arith.fptosi' as it is: source type f8E4M3FN is not f16, bf16, f32 or f64
// The remark of rounding=rz on a roundeven that sits after the clamp:
// RZREMARK: fptosi-to-select.mlir:[[# @LINE + 49]]:8: remark: fptosi-to-select: left 'arith.fptosi' as it is: the range is unbounded below: rounding=rz does not fold 'math.roundeven', whose result the conversion reads
// CHECK-LABEL: func.func @left_alone
// CHECK: arith.fptosi %{{.*}} : f32 to i32
// CHECK: arith.fptosi %{{.*}} : f32 to i32
// CHECK: arith.fptosi %{{.*}} : f32 to i8
// CHECK: arith.fptoui %{{.*}} : f32 to i32
// CHECK: arith.fptosi %{{.*}} : f32 to i32
// CHECK: arith.fptosi %{{.*}} : f32 to i32
// CHECK: arith.fptosi %{{.*}} : f32 to i32
// CHECK: arith.fptosi %{{.*}} : vector<2xf32> to vector<2xi32>
// CHECK: arith.fptosi %{{.*}} : f8E4M3FN to i32
func.func @left_alone(%x: f32, %y: f32, %v: vector<2xf32>, %e: f8E4M3FN) -> (i32, i32, i8, i32, i32, i32, i32, vector<2xi32>, i32, i32) {
  %c0 = arith.constant 0.0 : f32
  %c100 = arith.constant 100.0 : f32
  %c200 = arith.constant 200.0 : f32
  %cm200 = arith.constant -200.0 : f32
  %c3 = arith.constant 3.0 : f32
  %cm3 = arith.constant -3.0 : f32
  %nan = arith.constant 0x7FC00000 : f32
  %inf = arith.constant 0xFF800000 : f32
  %ns = arith.constant dense<[1.0, 2.0]> : vector<2xf32>
  %ns0 = arith.constant dense<0.0> : vector<2xf32>
  %a0 = arith.maxnumf %x, %c0 : f32
  %b0 = arith.minnumf %x, %c3 : f32
  %b1 = arith.maxnumf %b0, %y : f32
  %d0 = arith.minnumf %x, %c200 : f32
  %d1 = arith.maxnumf %d0, %cm200 : f32
  %e0 = arith.minnumf %x, %c3 : f32
  %e1 = arith.maxnumf %e0, %cm3 : f32
  %f0 = arith.minnumf %x, %c100 : f32
  %f1 = arith.maxnumf %f0, %c0 : f32
  %g0 = arith.minnumf %x, %c3 : f32
  %g1 = arith.maxnumf %g0, %nan : f32
  %h0 = arith.minnumf %x, %c3 : f32
  %h1 = arith.maxnumf %h0, %inf : f32
  %k0 = arith.minnumf %v, %ns : vector<2xf32>
  %k1 = arith.maxnumf %k0, %ns0 : vector<2xf32>
  %r0 = arith.minnumf %x, %c3 : f32
  %r1 = arith.maxnumf %r0, %cm3 : f32
  %r2 = math.roundeven %r1 : f32
  %0 = arith.fptosi %a0 : f32 to i32
  %1 = arith.fptosi %b1 : f32 to i32
  %2 = arith.fptosi %d1 : f32 to i8
  %3 = arith.fptoui %e1 : f32 to i32
  %4 = arith.fptosi %f1 : f32 to i32
  %5 = arith.fptosi %g1 : f32 to i32
  %6 = arith.fptosi %h1 : f32 to i32
  %7 = arith.fptosi %k1 : vector<2xf32> to vector<2xi32>
  %8 = arith.fptosi %e : f8E4M3FN to i32
  %9 = arith.fptosi %r2 : f32 to i32
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9 : i32, i32, i8, i32, i32, i32, i32, vector<2xi32>, i32, i32
}
