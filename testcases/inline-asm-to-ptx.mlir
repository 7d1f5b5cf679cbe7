// RUN: lowering-opt %s --split-input-file -p 'builtin.module(inline-asm-to-ptx)' 2>&1 | filecheck %s
// RUN: lowering-opt %s --split-input-file -p 'builtin.module(inline-asm-to-ptx)' 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK

// CHECK-LABEL: func.func @one_output
// CHECK: %[[R:.*]] = nvvm.inline_ptx "cvt.rni.s32.f32 {$w0}, {$r0};" ro(%arg0 : f32) -> i32
// CHECK-NOT: llvm.inline_asm
// CHECK: return %[[R]]
func.func @one_output(%x: f32) -> i32 {
  %0 = llvm.inline_asm "cvt.rni.s32.f32 $0, $1;", "=r,f" %x : (f32) -> i32
  return %0 : i32
}

// -----
// Several inputs, ${N} spelling and $$.
// CHECK-LABEL: func.func @inputs
// CHECK: nvvm.inline_ptx "fma.rn.f32 {$w0}, {$r0}, {$r1}, {$r2}; // $" ro(%arg0, %arg1, %arg2 : f32, f32, f32) -> f32
func.func @inputs(%a: f32, %b: f32, %c: f32) -> f32 {
  %0 = llvm.inline_asm "fma.rn.f32 ${0}, $1, ${2}, $3; // $$", "=f,f,f,f" %a, %b, %c : (f32, f32, f32) -> f32
  return %0 : f32
}

// -----
// Two outputs: the struct is rebuilt from the nvvm.inline_ptx results.
// CHECK-LABEL: func.func @two_outputs
// CHECK: %[[W:.*]]:2 = nvvm.inline_ptx "mov.b64 {{[{]}}{$w0}, {$w1}}, {$r0};" ro(%arg0 : i64) -> i32, i32
// CHECK: %[[U:.*]] = llvm.mlir.undef : !llvm.struct<(i32, i32)>
// CHECK: %[[S:.*]] = llvm.insertvalue %[[W]]#0, %[[U]][0]
// CHECK: llvm.insertvalue %[[W]]#1, %[[S]][1]
func.func @two_outputs(%x: i64) -> !llvm.struct<(i32, i32)> {
  %0 = llvm.inline_asm "mov.b64 {$0, $1}, $2;", "=r,=r,l" %x : (i64) -> !llvm.struct<(i32, i32)>
  return %0 : !llvm.struct<(i32, i32)>
}

// -----
// Pointers, 16-bit and 64-bit registers.
// CHECK-LABEL: func.func @register_classes
// CHECK: nvvm.inline_ptx "cvta.to.global.u64 {$w0}, {$r0};" ro(%arg0 : !llvm.ptr) -> i64
// CHECK: nvvm.inline_ptx "cvt.f32.f16 {$w0}, {$r0};" ro(%arg1 : f16) -> f32
// CHECK: nvvm.inline_ptx "add.f64 {$w0}, {$r0}, {$r0};" ro(%arg2 : f64) -> f64
func.func @register_classes(%p: !llvm.ptr, %h: f16, %d: f64) -> (i64, f32, f64) {
  %0 = llvm.inline_asm "cvta.to.global.u64 $0, $1;", "=l,l" %p : (!llvm.ptr) -> i64
  %1 = llvm.inline_asm "cvt.f32.f16 $0, $1;", "=f,h" %h : (f16) -> f32
  %2 = llvm.inline_asm "add.f64 $0, $1, $1;", "=d,d" %d : (f64) -> f64
  return %0, %1, %2 : i64, f32, f64
}

// -----
// Left alone, each with its reason.
// REMARK: inline-asm-to-ptx.mlir:[[# @LINE + 14]]:3: remark: inline-asm-to-ptx: left 'llvm.inline_asm' as it is: it has side effects
// REMARK: inline-asm-to-ptx.mlir:[[# @LINE + 14]]:8: remark: inline-asm-to-ptx: left 'llvm.inline_asm' as it is: clobber '~{memory}'
// REMARK: inline-asm-to-ptx.mlir:[[# @LINE + 14]]:8: remark: inline-asm-to-ptx: left 'llvm.inline_asm' as it is: constraint '0' (early-clobber, indirect or tied) has no nvvm.inline_ptx spelling
// REMARK: inline-asm-to-ptx.mlir:[[# @LINE + 14]]:8: remark: inline-asm-to-ptx: left 'llvm.inline_asm' as it is: constraint '=&r' (early-clobber, indirect or tied) has no nvvm.inline_ptx spelling
// REMARK: inline-asm-to-ptx.mlir:[[# @LINE + 14]]:8: remark: inline-asm-to-ptx: left 'llvm.inline_asm' as it is: constraint 'n' is not a plain register class
// REMARK: inline-asm-to-ptx.mlir:[[# @LINE + 14]]:8: remark: inline-asm-to-ptx: left 'llvm.inline_asm' as it is: operand modifier '${1:x}' has no nvvm.inline_ptx spelling
// REMARK: inline-asm-to-ptx.mlir:[[# @LINE + 14]]:8: remark: inline-asm-to-ptx: left 'llvm.inline_asm' as it is: constraint 'r' on f32: nvvm.inline_ptx would use 'f'
// REMARK: inline-asm-to-ptx.mlir:[[# @LINE + 14]]:8: remark: inline-asm-to-ptx: left 'llvm.inline_asm' as it is: a float-constant input would get the 'n' constraint in CuTeDSL 4.8.1's lowering
// CHECK-LABEL: func.func @left_alone
// CHECK-COUNT-8: llvm.inline_asm
// CHECK-NOT: nvvm.inline_ptx
func.func @left_alone(%x: f32, %i: i32, %p: !llvm.ptr) -> (i32, i32, i32, i32, i32, i32, f32) {
  %c = arith.constant 1.0 : f32
  %c3 = arith.constant 3 : i32
  llvm.inline_asm has_side_effects "st.global.f32 [$0], $1;", "l,f" %p, %x : (!llvm.ptr, f32) -> ()
  %0 = llvm.inline_asm "ld.global.u32 $0, [$1];", "=r,l,~{memory}" %p : (!llvm.ptr) -> i32
  %1 = llvm.inline_asm "add.u32 $0, $0, 1;", "=r,0" %i : (i32) -> i32
  %2 = llvm.inline_asm "add.u32 $0, $1, 1;", "=&r,r" %i : (i32) -> i32
  %3 = llvm.inline_asm "add.u32 $0, $1, $2;", "=r,r,n" %i, %c3 : (i32, i32) -> i32
  %4 = llvm.inline_asm "mov.b32 $0, ${1:x};", "=r,r" %i : (i32) -> i32
  %5 = llvm.inline_asm "mov.b32 $0, $1;", "=r,r" %x : (f32) -> i32
  %6 = llvm.inline_asm "mov.b32 $0, $1;", "=f,f" %c : (f32) -> f32
  return %0, %1, %2, %3, %4, %5, %6 : i32, i32, i32, i32, i32, i32, f32
}
