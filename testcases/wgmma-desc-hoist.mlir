// wgmma-desc-hoist: a descriptor's pure arithmetic moves to right after its latest input,
// out of loops that do not change it; nothing else moves, and a load stops it with a remark.

// RUN: lowering-opt %S/Inputs/wgmma-desc-loop.mlir -p 'builtin.module(wgmma-desc-hoist)' --statistics 2>%t.err | filecheck %s
// RUN: filecheck %s --check-prefix=ERR < %t.err

// Q's descriptor and its k-step now sit in the entry block, before the loop ...
// CHECK-LABEL: llvm.func @loop
// CHECK: %[[EXT:.*]] = llvm.zext %arg1 : i32 to i64
// CHECK: %[[Q:.*]] = llvm.or %[[EXT]], %[[HI:.*]] : i64
// CHECK-NEXT: %[[Q1:.*]] = llvm.add %[[Q]], %[[C2:.*]] : i64
// CHECK-NEXT: llvm.br ^bb1
// ... K's stays in the loop (it is computed from %i), its k-step right after it, and the
// add of the loaded descriptor right after the load:
// CHECK: ^bb1(%[[I:.*]]: i32):
// CHECK-NEXT: %[[K0:.*]] = llvm.shl %[[I]]
// CHECK-NEXT: %[[KZ:.*]] = llvm.zext %[[K0]]
// CHECK-NEXT: %[[K:.*]] = llvm.or %[[KZ]], %[[HI]] : i64
// CHECK-NEXT: %[[K1:.*]] = llvm.add %[[K]], %[[C2]] : i64
// CHECK-NEXT: %[[L:.*]] = llvm.load
// CHECK-NEXT: %[[L1:.*]] = llvm.add %[[L]], %[[C2]] : i64
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-NEXT: llvm.inline_asm {{.*}} %[[Q]], %[[K]] :
// CHECK-NEXT: llvm.inline_asm {{.*}} %[[Q1]], %[[K1]] :
// CHECK-NEXT: llvm.inline_asm {{.*}} %[[L1]], %[[K1]] :
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned

// A division by a constant moves like arithmetic; one by a value stays, with a remark:
// CHECK-LABEL: llvm.func @divisions
// CHECK: %[[R:.*]] = llvm.srem %arg1, %{{.*}} : i32
// CHECK-NEXT: %[[A:.*]] = llvm.zext %[[R]] : i32 to i64
// CHECK-NEXT: llvm.br ^bb1
// CHECK: ^bb1(
// CHECK-NEXT: %[[D:.*]] = llvm.udiv %arg1, %arg0 : i32
// CHECK-NEXT: %[[B:.*]] = llvm.zext %[[D]] : i32 to i64
// CHECK-NEXT: nvvm.wgmma.fence.aligned
// CHECK-NEXT: llvm.inline_asm {{.*}} %[[A]], %[[B]] :

// ERR: wgmma-desc-loop.mlir:15:8: remark: wgmma-desc-hoist: a descriptor's computation stops at 'llvm.load' (not pure arithmetic)
// ERR: wgmma-desc-loop.mlir:40:8: remark: wgmma-desc-hoist: a descriptor's computation stops at 'llvm.udiv'
// ERR: (S) 8 descriptors
// ERR-NEXT: (S) 6 moved
// ERR-NEXT: (S) 2 left

// On our FMHA D=128 (a real post-stage dump, testcases/wgmma-report.mlir says which): Q's
// descriptors leave the key loop. The statistics, and the report after it: the descriptors'
// forms are the same (the same ops, moved).
// RUN: gunzip -c %S/Inputs/fmha128-sm90a.post.mlir.gz | lowering-opt - -p 'builtin.module(wgmma-desc-hoist,wgmma-report)' --statistics 2>&1 >/dev/null | filecheck %s --check-prefix=FMHA
// FMHA: remark: wgmma-desc-hoist: a descriptor's computation stops at 'nvvm.shfl.sync'
// FMHA: 'wgmma-desc-hoist'
// FMHA-NEXT: (S) 48 descriptors
// FMHA-NEXT: (S) {{[1-9][0-9]*}} moved
// FMHA: 'wgmma-report'
// FMHA-NEXT: (S) 32 wgmma
// FMHA-NEXT: (S) 4 groups
// FMHA-NEXT: (S) 42 add64
// FMHA-NEXT: (S) 6 low32
