// A key loop in the lowered form: %q is Q's descriptor (its inputs are the function's), %k is K's
// (it changes with %i), %l is loaded. Input of testcases/wgmma-desc-hoist.mlir.
llvm.func @loop(%n: i32, %addr: i32, %stage0: i32, %p: !llvm.ptr) {
  %c0 = llvm.mlir.constant(0 : i32) : i32
  %c1 = llvm.mlir.constant(1 : i32) : i32
  %c2 = llvm.mlir.constant(2 : i64) : i64
  %hi = llvm.mlir.constant(4611686293305360384 : i64) : i64
  %ext = llvm.zext %addr : i32 to i64
  %q = llvm.or %ext, %hi : i64
  llvm.br ^loop(%c0 : i32)
^loop(%i: i32):
  %k0 = llvm.shl %i, %c1 : i32
  %kz = llvm.zext %k0 : i32 to i64
  %k = llvm.or %kz, %hi : i64
  %l = llvm.load %p : !llvm.ptr -> i64
  %acc = llvm.mlir.constant(0.0 : f32) : f32
  nvvm.wgmma.fence.aligned
  %s0 = llvm.inline_asm has_side_effects "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {$0, $1, $2, $3}, $4, $5, p, 1, 1, 0, 0;", "=f,=f,=f,=f,l,l" %q, %k : (i64, i64) -> !llvm.struct<(f32, f32, f32, f32)>
  %q1 = llvm.add %q, %c2 : i64
  %k1 = llvm.add %k, %c2 : i64
  %s1 = llvm.inline_asm has_side_effects "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {$0, $1, $2, $3}, $4, $5, p, 1, 1, 0, 0;", "=f,=f,=f,=f,l,l" %q1, %k1 : (i64, i64) -> !llvm.struct<(f32, f32, f32, f32)>
  %l1 = llvm.add %l, %c2 : i64
  %s2 = llvm.inline_asm has_side_effects "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {$0, $1, $2, $3}, $4, $5, p, 1, 1, 0, 0;", "=f,=f,=f,=f,l,l" %l1, %k1 : (i64, i64) -> !llvm.struct<(f32, f32, f32, f32)>
  nvvm.wgmma.commit.group.sync.aligned
  %next = llvm.add %i, %c1 : i32
  %done = llvm.icmp "eq" %next, %n : i32
  llvm.cond_br %done, ^exit, ^loop(%next : i32)
^exit:
  llvm.return
}

// Divisions: by a constant (not 0, not -1) they move like arithmetic; by a value they stop.
llvm.func @divisions(%n: i32, %addr: i32) {
  %c0 = llvm.mlir.constant(0 : i32) : i32
  %c1 = llvm.mlir.constant(1 : i32) : i32
  %c4 = llvm.mlir.constant(4 : i32) : i32
  llvm.br ^loop(%c0 : i32)
^loop(%i: i32):
  %r = llvm.srem %addr, %c4 : i32
  %d = llvm.udiv %addr, %n : i32
  %a = llvm.zext %r : i32 to i64
  %b = llvm.zext %d : i32 to i64
  nvvm.wgmma.fence.aligned
  %s0 = llvm.inline_asm has_side_effects "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {$0, $1, $2, $3}, $4, $5, p, 1, 1, 0, 0;", "=f,=f,=f,=f,l,l" %a, %b : (i64, i64) -> !llvm.struct<(f32, f32, f32, f32)>
  nvvm.wgmma.commit.group.sync.aligned
  %next = llvm.add %i, %c1 : i32
  %done = llvm.icmp "eq" %next, %n : i32
  llvm.cond_br %done, ^exit, ^loop(%next : i32)
^exit:
  llvm.return
}
