// RUN: lowering-opt %s --split-input-file -p 'builtin.module(truncf-to-select{e2m1=select})' 2>&1 | filecheck %s
// RUN: lowering-opt %s --split-input-file -p 'builtin.module(truncf-to-select)' 2>&1 | filecheck %s --check-prefix=ARITH
// RUN: lowering-opt %s --split-input-file -p 'builtin.module(truncf-to-select{arch=sm_100a})' 2>&1 | filecheck %s --check-prefix=SM100
// RUN: lowering-opt %s --split-input-file -p 'builtin.module(truncf-to-select{arch=sm_90a})' 2>&1 | filecheck %s --check-prefix=SM90
// RUN: lowering-opt %s --split-input-file -p 'builtin.module(truncf-to-select{arch=sm_100a prefer-hardware=false})' 2>&1 | filecheck %s --check-prefix=NOHW
// RUN: lowering-opt %s --split-input-file -p 'builtin.module(truncf-to-select)' 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK
// RUN: not lowering-opt %s -p 'builtin.module(truncf-to-select{arch=hopper})' 2>&1 | filecheck %s --check-prefix=BADARCH
// BADARCH: <pass-pipeline>:1:16: error: invalid value 'hopper' for option 'arch': unknown target 'hopper': CuTeDSL {{[0-9.]+}} accepts sm_80, sm_86, {{.*}}sm_100, sm_100a, sm_100f,

// E2M1: one unordered compare + select per threshold on |x|, ties to the even code,
// then the sign (not for NaN), then the 4-bit code reinterpreted as f4E2M1FN.
// CHECK-LABEL: func.func @e2m1_vector
// CHECK: %[[BITS:.*]] = arith.bitcast %arg0 : vector<8xf32> to vector<8xi32>
// CHECK: %[[ABSBITS:.*]] = arith.andi %[[BITS]], %{{.*}} : vector<8xi32>
// CHECK: %[[ABS:.*]] = arith.bitcast %[[ABSBITS]] : vector<8xi32> to vector<8xf32>
// CHECK: arith.cmpf ugt, %[[ABS]], %{{.*}} : vector<8xf32>
// CHECK: arith.cmpf uge, %[[ABS]], %{{.*}} : vector<8xf32>
// CHECK: arith.cmpf ugt, %[[ABS]], %{{.*}} : vector<8xf32>
// CHECK: arith.cmpf uge, %[[ABS]], %{{.*}} : vector<8xf32>
// CHECK: arith.cmpf ugt, %[[ABS]], %{{.*}} : vector<8xf32>
// CHECK: arith.cmpf uge, %[[ABS]], %{{.*}} : vector<8xf32>
// CHECK: %[[TOP:.*]] = arith.cmpf ugt, %[[ABS]], %{{.*}} : vector<8xf32>
// The codes are selected already shifted to bits 28..31: 7 << 28 above 5.0.
// CHECK: %[[SEVEN:.*]] = arith.constant dense<1879048192> : vector<8xi32>
// CHECK: %[[CODE:.*]] = arith.select %[[TOP]], %[[SEVEN]], %{{.*}} : vector<8xi1>, vector<8xi32>
// The sign, unless x is NaN: as i32, negative non-NaN patterns are those <= 0xFF800000 (-inf).
// CHECK: %[[NEG:.*]] = arith.cmpi sle, %[[BITS]], %{{.*}} : vector<8xi32>
// CHECK: %[[SIGNBIT:.*]] = arith.constant dense<-2147483648> : vector<8xi32>
// CHECK: arith.select %[[NEG]], %[[SIGNBIT]], %{{.*}} : vector<8xi1>, vector<8xi32>
// CHECK: %[[SIGNED:.*]] = arith.ori %[[CODE]], %{{.*}} : vector<8xi32>
// Eight 4-bit codes (each in bits 28..31 of its lane) are packed into one i32, lane 0
// lowest, from the last lane down: word = (word << 4) | (lane >> 28).
// CHECK: %[[L7:.*]] = vector.extract %[[SIGNED]][7] : i32 from vector<8xi32>
// CHECK: %[[W7:.*]] = arith.shrui %[[L7]], %[[C28:.*]] : i32
// CHECK: %[[L6:.*]] = vector.extract %[[SIGNED]][6] : i32 from vector<8xi32>
// CHECK: %[[N6:.*]] = arith.shrui %[[L6]], %[[C28]] : i32
// CHECK: %[[S7:.*]] = arith.shli %[[W7]], %[[FOUR:.*]] : i32
// CHECK: arith.ori %[[S7]], %[[N6]] : i32
// CHECK: %[[L0:.*]] = vector.extract %[[SIGNED]][0] : i32 from vector<8xi32>
// CHECK: %[[WORDS:.*]] = vector.from_elements %{{.*}} : vector<1xi32>
// CHECK: %[[NIBBLE:.*]] = vector.bitcast %[[WORDS]] : vector<1xi32> to vector<8xi4>
// CHECK: %[[Q:.*]] = arith.bitcast %[[NIBBLE]] : vector<8xi4> to vector<8xf4E2M1FN>
// CHECK-NOT: arith.truncf
// CHECK-NOT: fptosi
// CHECK: return %[[Q]]
// The default E2M1 formulation: |x| saturated to 6 (NaN -> 6), p = 2^max(exponent, 0)
// from the pattern, one rounding in fma(p, 2^22, a), the exact rounded value back by
// fma(p, -2^22, t), scaled by 2^-126 so that its pattern is the code << 22.
// ARITH-LABEL: func.func @e2m1_vector
// ARITH: %[[ABS:.*]] = math.absf %arg0 : vector<8xf32>
// ARITH: %[[SIX:.*]] = arith.constant dense<6.000000e+00> : vector<8xf32>
// ARITH: %[[A:.*]] = llvm.intr.minnum(%[[ABS]], %[[SIX]])
// ARITH: %[[AB:.*]] = arith.bitcast %[[A]] : vector<8xf32> to vector<8xi32>
// ARITH: %[[ONE:.*]] = arith.constant dense<1065353216> : vector<8xi32>
// ARITH: %[[ATLEAST1:.*]] = arith.maxui %[[AB]], %[[ONE]] : vector<8xi32>
// ARITH: %[[EXPMASK:.*]] = arith.constant dense<2139095040> : vector<8xi32>
// ARITH: %[[PB:.*]] = arith.andi %[[ATLEAST1]], %[[EXPMASK]] : vector<8xi32>
// ARITH: %[[P:.*]] = arith.bitcast %[[PB]] : vector<8xi32> to vector<8xf32>
// ARITH: %[[M22:.*]] = arith.constant dense<0x4A800000> : vector<8xf32>
// ARITH: %[[T:.*]] = math.fma %[[P]], %[[M22]], %[[A]] : vector<8xf32>
// ARITH: %[[NM22:.*]] = arith.constant dense<0xCA800000> : vector<8xf32>
// ARITH: %[[R:.*]] = math.fma %[[P]], %[[NM22]], %[[T]] : vector<8xf32>
// ARITH: %[[TINY:.*]] = arith.constant dense<1.17549435E-38> : vector<8xf32>
// ARITH: %[[S:.*]] = arith.mulf %[[R]], %[[TINY]] : vector<8xf32>
// ARITH: %[[CODE22:.*]] = arith.bitcast %[[S]] : vector<8xf32> to vector<8xi32>
// The sign from minnum(x, +inf): x itself, +inf for NaN (whose result is +6).
// ARITH: %[[INF:.*]] = arith.constant dense<0x7F800000> : vector<8xf32>
// ARITH: %[[SX:.*]] = llvm.intr.minnum(%arg0, %[[INF]])
// ARITH: %[[SXB:.*]] = arith.bitcast %[[SX]] : vector<8xf32> to vector<8xi32>
// ARITH: %[[SIGN:.*]] = arith.andi %[[SXB]], %{{.*}} : vector<8xi32>
// ARITH: %[[SIX_I:.*]] = arith.constant dense<6> : vector<8xi32>
// ARITH: %[[CODE28:.*]] = arith.shli %[[CODE22]], %[[SIX_I]] : vector<8xi32>
// ARITH: %[[TOP:.*]] = arith.ori %[[CODE28]], %[[SIGN]] : vector<8xi32>
// ARITH: vector.extract %[[TOP]][7]
// ARITH: vector.bitcast %{{.*}} : vector<1xi32> to vector<8xi4>
// ARITH-NOT: arith.truncf
// ARITH-NOT: arith.cmpf
// SM100-LABEL: func.func @e2m1_vector
// SM100: arith.truncf %arg0 : vector<8xf32> to vector<8xf4E2M1FN>
// SM90-LABEL: func.func @e2m1_vector
// SM90-NOT: arith.truncf
// NOHW-LABEL: func.func @e2m1_vector
// NOHW-NOT: arith.truncf
func.func @e2m1_vector(%x: vector<8xf32>) -> vector<8xf4E2M1FN> {
  %0 = arith.truncf %x : vector<8xf32> to vector<8xf4E2M1FN>
  return %0 : vector<8xf4E2M1FN>
}

// -----
// The thresholds are the midpoints 0.25 0.75 1.25 1.75 2.5 3.5 5, with >= where the
// upper neighbour's code is even.
// CHECK-LABEL: func.func @e2m1_thresholds
// ARITH-LABEL: func.func @e2m1_thresholds
// NOHW-LABEL: func.func @e2m1_thresholds
// bf16 sources are widened exactly first.
// CHECK: %[[W:.*]] = arith.extf %arg0 : bf16 to f32
// CHECK: arith.bitcast %[[W]] : f32 to i32
// CHECK-DAG: arith.constant 2.500000e-01 : f32
// CHECK-DAG: arith.constant 7.500000e-01 : f32
// CHECK-DAG: arith.constant 1.250000e+00 : f32
// CHECK-DAG: arith.constant 1.750000e+00 : f32
// CHECK-DAG: arith.constant 2.500000e+00 : f32
// CHECK-DAG: arith.constant 3.500000e+00 : f32
// CHECK-DAG: arith.constant 5.000000e+00 : f32
func.func @e2m1_thresholds(%x: bf16) -> f4E2M1FN {
  %0 = arith.truncf %x : bf16 to f4E2M1FN
  return %0 : f4E2M1FN
}

// -----
// FP8: saturate |x| to the largest finite value, round the f32 bits to nearest even,
// subnormals through the f32 adder, NaN to 0x7F. SM90 has the E4M3 instruction.
// CHECK-LABEL: func.func @e4m3
// |x|'s pattern clamped to 448's (0x43E00000), subnormals below 2^-6's (0x3C800000).
// CHECK: %[[MAX:.*]] = arith.constant 1138753536 : i32
// CHECK: %[[KEPT:.*]] = arith.minui %{{.*}}, %[[MAX]] : i32
// CHECK: math.fma
// CHECK: %[[MIN:.*]] = arith.constant 1015021568 : i32
// CHECK: arith.cmpi ult, %[[KEPT]], %[[MIN]] : i32
// CHECK: arith.cmpf uno, %arg0, %arg0 : f32
// CHECK: %[[B:.*]] = arith.trunci %{{.*}} : i32 to i8
// CHECK: arith.bitcast %[[B]] : i8 to f8E4M3FN
// SM90-LABEL: func.func @e4m3
// SM90: arith.truncf %arg0 : f32 to f8E4M3FN
func.func @e4m3(%x: f32) -> f8E4M3FN {
  %0 = arith.truncf %x : f32 to f8E4M3FN
  return %0 : f8E4M3FN
}

// -----
// CHECK-LABEL: func.func @e5m2
// CHECK: arith.constant 1197473792 : i32
// CHECK: arith.bitcast %{{.*}} : i8 to f8E5M2
func.func @e5m2(%x: f16) -> f8E5M2 {
  %0 = arith.truncf %x : f16 to f8E5M2
  return %0 : f8E5M2
}

// -----
// E8M0 upward (what CuTeDSL emits for block scales): the f32 exponent field, plus one
// when any mantissa bit is set, capped at 0xFE; NaN 0xFF.
// CHECK-LABEL: func.func @e8m0_upward
// CHECK: %[[BITS:.*]] = arith.bitcast %arg0 : f32 to i32
// CHECK: %[[EXP:.*]] = arith.shrui %[[BITS]]
// CHECK: %[[MANT:.*]] = arith.andi %[[BITS]]
// CHECK: arith.cmpi ne, %[[MANT]]
// CHECK: arith.minui
// CHECK: arith.bitcast %{{.*}} : i8 to f8E8M0FNU
// CHECK-NOT: arith.truncf
// SM90-LABEL: func.func @e8m0_upward
// SM90-NOT: arith.truncf
// SM100-LABEL: func.func @e8m0_upward
// SM100: arith.truncf %arg0 upward : f32 to f8E8M0FNU
func.func @e8m0_upward(%x: f32) -> f8E8M0FNU {
  %0 = arith.truncf %x upward : f32 to f8E8M0FNU
  return %0 : f8E8M0FNU
}

// -----
// E8M0 to-nearest-even, as MLIR's APFloat defines it: E8M0's significand is the
// implicit 1 alone, so every tie 1.5 * 2^k goes up (3.0 -> 4.0): one unsigned
// compare of the mantissa with the half (no "odd exponent" test), and for f32
// denormals the tie 1.5 * 2^-127 (mantissa 0x600000) goes up to 2^-126 too.
// CHECK-LABEL: func.func @e8m0_nearest
// CHECK: %[[BITS:.*]] = arith.bitcast %arg0 : f32 to i32
// CHECK: %[[MANT:.*]] = arith.andi %[[BITS]], %c8388607_i32
// CHECK-NOT: arith.andi
// CHECK: arith.cmpi uge, %[[MANT]], %c4194304_i32
// CHECK: arith.cmpi ugt, %[[MANT]], %c6291455_i32
// CHECK: arith.bitcast %{{.*}} : i8 to f8E8M0FNU
// CHECK-NOT: arith.truncf
func.func @e8m0_nearest(%x: f32) -> f8E8M0FNU {
  %0 = arith.truncf %x to_nearest_even : f32 to f8E8M0FNU
  return %0 : f8E8M0FNU
}

// -----
// Other truncf ops are no candidates: no rewrite, no remark.
// CHECK-LABEL: func.func @not_narrow
// SM90-LABEL: func.func @not_narrow
// CHECK: arith.truncf %arg0 : f32 to bf16
// REMARK-NOT: not_narrow
func.func @not_narrow(%x: f32) -> bf16 {
  %0 = arith.truncf %x : f32 to bf16
  return %0 : bf16
}

// -----
// Left alone, with a located remark: rounding modes the format does not take, f64.
// REMARK: truncf-to-select.mlir:[[# @LINE + 6]]:8: remark: truncf-to-select: left 'arith.truncf' as it is: rounding 'upward' to f4E2M1FN is not supported (only to_nearest_even)
// REMARK: truncf-to-select.mlir:[[# @LINE + 6]]:8: remark: truncf-to-select: left 'arith.truncf' as it is: rounding 'to_nearest_away' to f8E8M0FNU is not supported
// REMARK: truncf-to-select.mlir:[[# @LINE + 6]]:8: remark: truncf-to-select: left 'arith.truncf' as it is: source f64 is not f32, f16 or bf16
// CHECK-LABEL: func.func @left_alone
// CHECK-COUNT-3: arith.truncf
func.func @left_alone(%x: f32, %d: f64) -> (f4E2M1FN, f8E8M0FNU, f8E4M3FN) {
  %0 = arith.truncf %x upward : f32 to f4E2M1FN
  %1 = arith.truncf %x to_nearest_away : f32 to f8E8M0FNU
  %2 = arith.truncf %d : f64 to f8E4M3FN
  return %0, %1, %2 : f4E2M1FN, f8E8M0FNU, f8E4M3FN
}
