// RUN: lowering-opt %s --split-input-file -p 'builtin.module(bitcast-to-ptx{emit=ptx})' 2>&1 | filecheck %s --check-prefixes=CHECK,PTX
// RUN: lowering-opt %s --split-input-file -p 'builtin.module(bitcast-to-ptx{emit=asm})' 2>&1 | filecheck %s --check-prefixes=CHECK,ASM
// RUN: lowering-opt %s --split-input-file -p 'builtin.module(bitcast-to-ptx)' 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK

// CHECK-LABEL: func.func @scalars
// PTX: nvvm.inline_ptx "mov.b32 {$w0}, {$r0};" ro(%arg0 : f32) -> i32
// PTX: nvvm.inline_ptx "mov.b32 {$w0}, {$r0};" ro(%arg1 : i32) -> f32
// PTX: nvvm.inline_ptx "mov.b16 {$w0}, {$r0};" ro(%arg2 : f16) -> i16
// PTX: nvvm.inline_ptx "mov.b16 {$w0}, {$r0};" ro(%arg3 : i16) -> bf16
// PTX: nvvm.inline_ptx "mov.b64 {$w0}, {$r0};" ro(%arg4 : f64) -> i64
// ASM: llvm.inline_asm "mov.b32 $0, $1;", "=r,f" %arg0 : (f32) -> i32
// ASM: llvm.inline_asm "mov.b32 $0, $1;", "=f,r" %arg1 : (i32) -> f32
// ASM: llvm.inline_asm "mov.b16 $0, $1;", "=h,h" %arg2 : (f16) -> i16
// ASM: llvm.inline_asm "mov.b16 $0, $1;", "=h,h" %arg3 : (i16) -> bf16
// ASM: llvm.inline_asm "mov.b64 $0, $1;", "=l,d" %arg4 : (f64) -> i64
// CHECK-NOT: bitcast
func.func @scalars(%a: f32, %b: i32, %c: f16, %d: i16, %e: f64) -> (i32, f32, i16, bf16, i64) {
  %0 = arith.bitcast %a : f32 to i32
  %1 = llvm.bitcast %b : i32 to f32
  %2 = arith.bitcast %c : f16 to i16
  %3 = arith.bitcast %d : i16 to bf16
  %4 = arith.bitcast %e : f64 to i64
  return %0, %1, %2, %3, %4 : i32, f32, i16, bf16, i64
}

// -----
// CHECK-LABEL: func.func @vector_lanes
// CHECK: vector.extract %arg0[0] : f32 from vector<2xf32>
// PTX: nvvm.inline_ptx "mov.b32 {$w0}, {$r0};"
// CHECK: vector.extract %arg0[1] : f32 from vector<2xf32>
// PTX: nvvm.inline_ptx "mov.b32 {$w0}, {$r0};"
// CHECK: vector.from_elements {{.*}} : vector<2xi32>
// CHECK-NOT: arith.bitcast
func.func @vector_lanes(%v: vector<2xf32>) -> vector<2xi32> {
  %0 = arith.bitcast %v : vector<2xf32> to vector<2xi32>
  return %0 : vector<2xi32>
}

// -----
// Left alone: same-class, lane-count changes, pointers.
// REMARK: bitcast-to-ptx.mlir:[[# @LINE + 8]]:8: remark: bitcast-to-ptx: left 'arith.bitcast' as it is: only float<->integer bitcasts are rewritten, not f32 to f32
// REMARK: bitcast-to-ptx.mlir:[[# @LINE + 8]]:8: remark: bitcast-to-ptx: left 'llvm.bitcast' as it is: vector<2xf16> to i32 is not a lane-by-lane bitcast of 1-D vectors
// REMARK: bitcast-to-ptx.mlir:[[# @LINE + 8]]:8: remark: bitcast-to-ptx: left 'llvm.bitcast' as it is: only float<->integer bitcasts are rewritten, not !llvm.ptr to !llvm.ptr
// CHECK-LABEL: func.func @left_alone
// CHECK: arith.bitcast %arg0 : f32 to f32
// CHECK: llvm.bitcast %arg1 : vector<2xf16> to i32
// CHECK: llvm.bitcast %arg2 : !llvm.ptr to !llvm.ptr
func.func @left_alone(%a: f32, %h: vector<2xf16>, %p: !llvm.ptr) -> (f32, i32, !llvm.ptr) {
  %0 = arith.bitcast %a : f32 to f32
  %1 = llvm.bitcast %h : vector<2xf16> to i32
  %2 = llvm.bitcast %p : !llvm.ptr to !llvm.ptr
  return %0, %1, %2 : f32, i32, !llvm.ptr
}
