// RUN: lowering-opt %s --split-input-file -p 'builtin.module(ptx-float-operands)' --statistics 2>&1 | filecheck %s

// CHECK-LABEL: func.func @float_constants
// CHECK: %[[C:.*]] = arith.constant 1.500000e+00 : f32
// CHECK: %[[H:.*]] = arith.constant 2.000000e+00 : f16
// CHECK: %[[I:.*]] = arith.constant 7 : i32
// CHECK: %[[M:.*]] = llvm.inline_asm "mov.b32 $0, $1;", "=f,f" %[[C]] : (f32) -> f32
// CHECK: nvvm.inline_ptx "fma.rn.f32 {$w0}, {$r0}, {$r1}, {$r0};" ro(%arg0, %[[M]] : f32, f32) -> f32
// CHECK-NEXT: nvvm.inline_ptx "add.u32 {$w0}, {$r0}, {$r1};" ro(%arg1, %[[I]] : i32, i32) -> i32
// CHECK-NEXT: %[[MH:.*]] = llvm.inline_asm "mov.b16 $0, $1;", "=h,h" %[[H]] : (f16) -> f16
// CHECK-NEXT: nvvm.inline_ptx "mul.f16 {$w0}, {$r0}, {$r0};" ro(%[[MH]] : f16) -> f16
func.func @float_constants(%x: f32, %i: i32) -> (f32, i32, f16) {
  %c = arith.constant 1.5 : f32
  %h = arith.constant 2.0 : f16
  %k = arith.constant 7 : i32
  %0 = nvvm.inline_ptx "fma.rn.f32 {$w0}, {$r0}, {$r1}, {$r0};" ro(%x, %c : f32, f32) -> f32
  %1 = nvvm.inline_ptx "add.u32 {$w0}, {$r0}, {$r1};" ro(%i, %k : i32, i32) -> i32
  %2 = nvvm.inline_ptx "mul.f16 {$w0}, {$r0}, {$r0};" ro(%h : f16) -> f16
  return %0, %1, %2 : f32, i32, f16
}

// -----
// An llvm.mlir.constant counts too; a runtime float operand stays as it is.
// CHECK-LABEL: func.func @llvm_constant
// CHECK: %[[C:.*]] = llvm.mlir.constant(0.000000e+00 : f64) : f64
// CHECK: %[[M:.*]] = llvm.inline_asm "mov.b64 $0, $1;", "=d,d" %[[C]] : (f64) -> f64
// CHECK: %[[M2:.*]] = llvm.inline_asm "mov.b64 $0, $1;", "=d,d" %[[C]] : (f64) -> f64
// CHECK: nvvm.inline_ptx "fma.rn.f64 {$w0}, {$r0}, {$r1}, {$r2};" ro(%arg0, %[[M]], %[[M2]] : f64, f64, f64) -> f64
// CHECK: nvvm.inline_ptx "add.f64 {$w0}, {$r0}, {$r0};" ro(%arg0 : f64) -> f64
func.func @llvm_constant(%x: f64) -> (f64, f64) {
  %c = llvm.mlir.constant(0.0 : f64) : f64
  %0 = nvvm.inline_ptx "fma.rn.f64 {$w0}, {$r0}, {$r1}, {$r2};" ro(%x, %c, %c : f64, f64, f64) -> f64
  %1 = nvvm.inline_ptx "add.f64 {$w0}, {$r0}, {$r0};" ro(%x : f64) -> f64
  return %0, %1 : f64, f64
}

// CHECK: 'ptx-float-operands'
// CHECK-NEXT: (S) 3 rewritten - nvvm.inline_ptx ops whose operands were moved
// CHECK-NEXT: (S) 0 left
// CHECK-NEXT: (S) 4 operands - float-constant operands moved into registers
