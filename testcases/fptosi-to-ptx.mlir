// RUN: lowering-opt %s --split-input-file -p 'builtin.module(fptosi-to-ptx{emit=ptx})' 2>&1 | filecheck %s --check-prefixes=CHECK,PTX
// RUN: lowering-opt %s --split-input-file -p 'builtin.module(fptosi-to-ptx{emit=asm})' 2>&1 | filecheck %s --check-prefixes=CHECK,ASM
// RUN: lowering-opt %s --split-input-file -p 'builtin.module(fptosi-to-ptx{rounding=rmi emit=ptx})' 2>&1 | filecheck %s --check-prefix=RMI
// RUN: lowering-opt %s --split-input-file -p 'builtin.module(fptosi-to-ptx)' 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK

// CHECK-LABEL: func.func @plain_f32_to_i32
// PTX:  %[[R:.*]] = nvvm.inline_ptx "cvt.rzi.s32.f32 {$w0}, {$r0};" ro(%arg0 : f32) -> i32
// ASM:  %[[R:.*]] = llvm.inline_asm "cvt.rzi.s32.f32 $0, $1;", "=r,f" %arg0 : (f32) -> i32
// CHECK-NOT: arith.fptosi
// CHECK: return %[[R]]
func.func @plain_f32_to_i32(%x: f32) -> i32 {
  %0 = arith.fptosi %x : f32 to i32
  return %0 : i32
}

// -----
// Each rounding producer folds into one cvt and disappears.
// CHECK-LABEL: func.func @folds
// CHECK-NOT: math.
// PTX: nvvm.inline_ptx "cvt.rni.s32.f32 {$w0}, {$r0};" ro(%arg0 : f32)
// PTX: nvvm.inline_ptx "cvt.rmi.s32.f32 {$w0}, {$r0};" ro(%arg0 : f32)
// PTX: nvvm.inline_ptx "cvt.rpi.s32.f32 {$w0}, {$r0};" ro(%arg0 : f32)
// PTX: nvvm.inline_ptx "cvt.rzi.s32.f32 {$w0}, {$r0};" ro(%arg0 : f32)
// ASM: llvm.inline_asm "cvt.rni.s32.f32 $0, $1;", "=r,f" %arg0
// ASM: llvm.inline_asm "cvt.rmi.s32.f32 $0, $1;", "=r,f" %arg0
// ASM: llvm.inline_asm "cvt.rpi.s32.f32 $0, $1;", "=r,f" %arg0
// ASM: llvm.inline_asm "cvt.rzi.s32.f32 $0, $1;", "=r,f" %arg0
// CHECK-NOT: math.
// CHECK-NOT: arith.fpto
// With rounding=rmi only floor folds; the others keep their rounding op and truncate.
// RMI-LABEL: func.func @folds
// RMI: %[[E:.*]] = math.roundeven %arg0
// RMI: "cvt.rzi.s32.f32 {$w0}, {$r0};" ro(%[[E]] : f32)
// RMI-NOT: math.floor
// RMI: "cvt.rmi.s32.f32 {$w0}, {$r0};" ro(%arg0 : f32)
// RMI: %[[C:.*]] = math.ceil %arg0
// RMI: "cvt.rzi.s32.f32 {$w0}, {$r0};" ro(%[[C]] : f32)
func.func @folds(%x: f32) -> (i32, i32, i32, i32) {
  %e = math.roundeven %x : f32
  %0 = arith.fptosi %e : f32 to i32
  %f = math.floor %x : f32
  %1 = arith.fptosi %f : f32 to i32
  %c = math.ceil %x : f32
  %2 = arith.fptosi %c : f32 to i32
  %t = math.trunc %x : f32
  %3 = arith.fptosi %t : f32 to i32
  return %0, %1, %2, %3 : i32, i32, i32, i32
}

// -----
// The llvm.intr spellings fold too.
// CHECK-LABEL: func.func @llvm_intrinsics
// PTX: "cvt.rmi.s32.f32 {$w0}, {$r0};" ro(%arg0 : f32)
// PTX: "cvt.rni.u32.f32 {$w0}, {$r0};" ro(%arg0 : f32)
// CHECK-NOT: llvm.intr
func.func @llvm_intrinsics(%x: f32) -> (i32, i32) {
  %f = llvm.intr.floor(%x) : (f32) -> f32
  %0 = arith.fptosi %f : f32 to i32
  %e = llvm.intr.roundeven(%x) : (f32) -> f32
  %1 = arith.fptoui %e : f32 to i32
  return %0, %1 : i32, i32
}

// -----
// A rounding op with other users stays for them; the cvt reads its operand.
// CHECK-LABEL: func.func @shared_floor
// CHECK: %[[F:.*]] = math.floor %arg0 : f32
// PTX: "cvt.rmi.s32.f32 {$w0}, {$r0};" ro(%arg0 : f32)
// CHECK: return %{{.*}}, %[[F]]
func.func @shared_floor(%x: f32) -> (i32, f32) {
  %f = math.floor %x : f32
  %0 = arith.fptosi %f : f32 to i32
  return %0, %f : i32, f32
}

// -----
// math.round (ties away from zero) has no PTX integer mode: it stays, then rzi.
// CHECK-LABEL: func.func @round_stays
// CHECK: %[[R:.*]] = math.round %arg0 : f32
// PTX: "cvt.rzi.s32.f32 {$w0}, {$r0};" ro(%[[R]] : f32)
func.func @round_stays(%x: f32) -> i32 {
  %r = math.round %x : f32
  %0 = arith.fptosi %r : f32 to i32
  return %0 : i32
}

// -----
// Unsigned and narrow destinations: the cvt saturates at the destination's own width;
// 8-bit results come in a 32-bit register and are truncated.
// CHECK-LABEL: func.func @widths
// PTX: %[[U8:.*]] = nvvm.inline_ptx "cvt.rzi.u8.f32 {$w0}, {$r0};" ro(%arg0 : f32) -> i32
// PTX: arith.trunci %[[U8]] : i32 to i8
// PTX: nvvm.inline_ptx "cvt.rzi.s8.f32 {$w0}, {$r0};" ro(%arg0 : f32) -> i32
// PTX: nvvm.inline_ptx "cvt.rzi.s16.f32 {$w0}, {$r0};" ro(%arg0 : f32) -> i16
// PTX: nvvm.inline_ptx "cvt.rzi.u32.f32 {$w0}, {$r0};" ro(%arg0 : f32) -> i32
// PTX: %[[S64:.*]] = nvvm.inline_ptx "cvt.rzi.s64.f32 {$w0}, {$r0};" ro(%arg0 : f32) -> i64
// PTX: %[[NAN:.*]] = arith.cmpf uno, %arg0, %arg0 : f32
// PTX: %[[ZERO:.*]] = arith.constant 0 : i64
// PTX: arith.select %[[NAN]], %[[ZERO]], %[[S64]] : i64
// ASM: llvm.inline_asm "cvt.rzi.u8.f32 $0, $1;", "=r,f"
// ASM: llvm.inline_asm "cvt.rzi.s8.f32 $0, $1;", "=r,f"
// ASM: llvm.inline_asm "cvt.rzi.s16.f32 $0, $1;", "=h,f"
// ASM: llvm.inline_asm "cvt.rzi.u32.f32 $0, $1;", "=r,f"
// ASM: llvm.inline_asm "cvt.rzi.s64.f32 $0, $1;", "=l,f"
func.func @widths(%x: f32) -> (i8, i8, i16, i32, i64) {
  %0 = arith.fptoui %x : f32 to i8
  %1 = arith.fptosi %x : f32 to i8
  %2 = arith.fptosi %x : f32 to i16
  %3 = arith.fptoui %x : f32 to i32
  %4 = arith.fptosi %x : f32 to i64
  return %0, %1, %2, %3, %4 : i8, i8, i16, i32, i64
}

// -----
// Sources: f16 and f64 directly, bf16 through an exact extf.
// CHECK-LABEL: func.func @sources
// PTX: nvvm.inline_ptx "cvt.rzi.s32.f16 {$w0}, {$r0};" ro(%arg0 : f16) -> i32
// ASM: llvm.inline_asm "cvt.rzi.s32.f16 $0, $1;", "=r,h" %arg0 : (f16) -> i32
// CHECK: %[[W:.*]] = arith.extf %arg1 : bf16 to f32
// PTX: nvvm.inline_ptx "cvt.rmi.s32.f32 {$w0}, {$r0};" ro(%[[W]] : f32) -> i32
// PTX: nvvm.inline_ptx "cvt.rzi.u64.f64 {$w0}, {$r0};" ro(%arg2 : f64) -> i64
// ASM: llvm.inline_asm "cvt.rzi.u64.f64 $0, $1;", "=l,d" %arg2 : (f64) -> i64
// CHECK: arith.cmpf uno, %arg2, %arg2 : f64
func.func @sources(%h: f16, %b: bf16, %d: f64) -> (i32, i32, i64) {
  %0 = arith.fptosi %h : f16 to i32
  %f = math.floor %b : bf16
  %1 = arith.fptosi %f : bf16 to i32
  %2 = arith.fptoui %d : f64 to i64
  return %0, %1, %2 : i32, i32, i64
}

// -----
// Vectors are converted lane by lane.
// CHECK-LABEL: func.func @vector
// CHECK: %[[L0:.*]] = vector.extract %arg0[0] : f32 from vector<2xf32>
// PTX: %[[C0:.*]] = nvvm.inline_ptx "cvt.rni.s32.f32 {$w0}, {$r0};" ro(%[[L0]] : f32) -> i32
// CHECK: %[[L1:.*]] = vector.extract %arg0[1] : f32 from vector<2xf32>
// PTX: %[[C1:.*]] = nvvm.inline_ptx "cvt.rni.s32.f32 {$w0}, {$r0};" ro(%[[L1]] : f32) -> i32
// PTX: vector.from_elements %[[C0]], %[[C1]] : vector<2xi32>
// CHECK-NOT: arith.fptosi
func.func @vector(%v: vector<2xf32>) -> vector<2xi32> {
  %e = math.roundeven %v : vector<2xf32>
  %0 = arith.fptosi %e : vector<2xf32> to vector<2xi32>
  return %0 : vector<2xi32>
}

// -----
// What PTX cannot convert is left as it was, with a located remark.
// REMARK: fptosi-to-ptx.mlir:[[# @LINE + 6]]:8: remark: fptosi-to-ptx: left 'arith.fptosi' as it is: no PTX cvt to a 4-bit integer (only 8, 16, 32, 64)
// REMARK: fptosi-to-ptx.mlir:[[# @LINE + 6]]:8: remark: fptosi-to-ptx: left 'arith.fptosi' as it is: only 1-D fixed-length vectors are converted, not vector<2x2xf32>
// CHECK-LABEL: func.func @left_alone
// CHECK: arith.fptosi %arg0 : f32 to i4
// CHECK: arith.fptosi %arg1 : vector<2x2xf32> to vector<2x2xi32>
func.func @left_alone(%x: f32, %m: vector<2x2xf32>) -> (i4, vector<2x2xi32>) {
  %0 = arith.fptosi %x : f32 to i4
  %1 = arith.fptosi %m : vector<2x2xf32> to vector<2x2xi32>
  return %0, %1 : i4, vector<2x2xi32>
}
