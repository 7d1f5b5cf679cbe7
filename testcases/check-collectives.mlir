// RUN: not lowering-opt %s --split-input-file -p 'builtin.module(check-collectives)' -o /dev/null 2>&1 | filecheck %s
// RUN: lowering-opt %s --split-input-file -p 'builtin.module(check-collectives{mode=warn})' -o /dev/null 2>&1 | filecheck %s --check-prefix=WARN

// Kernels of 128 threads (nvvm.reqntid), as CuTeDSL traces them (the thread index
// read from nvvm.read.ptx.sreg.*; the warp index through make_warp_uniform).

// bar.sync (CTA scope) under `tidx < 64`: threads 0-63 of 128.
// CHECK: check-collectives.mlir:[[# @LINE + 9]]:5: error: 'nvvm.barrier' (PTX bar.sync) is a CTA collective reached by only part of the CTA: threads 0-63
// CHECK: check-collectives.mlir:[[# @LINE + 6]]:11: note: the condition that diverges: the `if` condition
// WARN: check-collectives.mlir:[[# @LINE + 7]]:5: warning: 'nvvm.barrier' {{.*}} threads 0-63
gpu.module @kernels {
  gpu.func @barrier_under_tid(%n: i32) kernel attributes {nvvm.reqntid = array<i32: 128, 1, 1>} {
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %c64 = arith.constant 64 : i32
    %lt = arith.cmpi slt, %tid, %c64 : i32
    scf.if %lt {
    nvvm.barrier
    }
    gpu.return
  }
}

// -----
// The same barrier under a warp-index test: warp-uniform is not enough at CTA scope.
// CHECK: check-collectives.mlir:[[# @LINE + 10]]:7: error: 'nvvm.barrier' {{.*}} CTA collective reached by only part of the CTA: threads 0-31
gpu.module @kernels {
  gpu.func @barrier_under_warp0() kernel attributes {nvvm.reqntid = array<i32: 128, 1, 1>} {
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %c32 = arith.constant 32 : i32
    %w = arith.floordivsi %tid, %c32 : i32
    %warp = cute_nvgpu.arch.make_warp_uniform(%w) : i32
    %c0 = arith.constant 0 : i32
    %is0 = arith.cmpi eq, %warp, %c0 : i32
    scf.if %is0 {
      nvvm.barrier
    }
    gpu.return
  }
}

// -----
// Near misses, no diagnostic: a barrier under a kernel-argument test (grid-uniform), a
// full-mask shuffle under a warp test, a shuffle whose mask names exactly the lanes
// that reach it (lanes 0-15), and a named barrier counting the 64 threads of warps 0-1.
// CHECK-NOT: check-collectives.mlir:{{(4[6-9]|[5-7][0-9]|80)}}:
gpu.module @kernels {
  gpu.func @near_misses(%n: i32, %v: f32) kernel attributes {nvvm.reqntid = array<i32: 128, 1, 1>} {
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %lane = nvvm.read.ptx.sreg.laneid : i32
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c2 = arith.constant 2 : i32
    %c16 = arith.constant 16 : i32
    %c31 = arith.constant 31 : i32
    %c32 = arith.constant 32 : i32
    %c64 = arith.constant 64 : i32
    %full = arith.constant -1 : i32
    %half = arith.constant 65535 : i32
    %pos = arith.cmpi sgt, %n, %c0 : i32
    scf.if %pos {
      nvvm.barrier
    }
    %warp = arith.floordivsi %tid, %c32 : i32
    %w1 = arith.cmpi eq, %warp, %c1 : i32
    scf.if %w1 {
      %s = nvvm.shfl.sync bfly %full, %v, %c16, %c31 : f32 -> f32
    }
    %low = arith.cmpi slt, %lane, %c16 : i32
    scf.if %low {
      %s = nvvm.shfl.sync idx %half, %v, %c0, %c31 : f32 -> f32
    }
    %w01 = arith.cmpi slt, %warp, %c2 : i32
    scf.if %w01 {
      nvvm.barrier id = %c1 number_of_threads = %c64
    }
    gpu.return
  }
}

// -----
// shfl.sync with a full mask under `lane < 16`: half of every warp.
// CHECK: check-collectives.mlir:[[# @LINE + 11]]:12: error: 'nvvm.shfl.sync' (PTX shfl.sync) is a warp collective reached by only part of a warp: lanes 0-15 of every warp
// CHECK: check-collectives.mlir:[[# @LINE + 8]]:12: note: the condition that diverges
gpu.module @kernels {
  gpu.func @shfl_under_lane(%v: f32) kernel attributes {nvvm.reqntid = array<i32: 128, 1, 1>} {
    %lane = nvvm.read.ptx.sreg.laneid : i32
    %c0 = arith.constant 0 : i32
    %c16 = arith.constant 16 : i32
    %c31 = arith.constant 31 : i32
    %full = arith.constant -1 : i32
    %low = arith.cmpi slt, %lane, %c16 : i32
    scf.if %low {
      %s = nvvm.shfl.sync idx %full, %v, %c0, %c31 : f32 -> f32
    }
    gpu.return
  }
}

// -----
// The lane-strided loop `for i in range(lane, 16, 32)`: only lanes 0-15 iterate.
// CHECK: check-collectives.mlir:[[# @LINE + 9]]:12: error: 'nvvm.vote.sync' {{.*}} reached by only part of a warp: lanes 0-15 of every warp
// CHECK: note: the condition that diverges: the trip count of this `for` loop
gpu.module @kernels {
  gpu.func @vote_in_lane_strided_loop(%p: i1) kernel attributes {nvvm.reqntid = array<i32: 128, 1, 1>} {
    %lane = nvvm.read.ptx.sreg.laneid : i32
    %c16 = arith.constant 16 : i32
    %c32 = arith.constant 32 : i32
    %full = arith.constant -1 : i32
    scf.for %i = %lane to %c16 step %c32 : i32 {
      %b = nvvm.vote.sync ballot %full, %p -> i32
    }
    gpu.return
  }
}

// -----
// wgmma under a warp-uniform test: one warp of a warpgroup. Under `tid / 128 == 0` (a
// whole warpgroup) it is fine.
// CHECK: check-collectives.mlir:[[# @LINE + 12]]:7: error: 'nvvm.wgmma.fence.aligned' (PTX wgmma.fence.sync.aligned) is a warpgroup collective reached by only part of a warpgroup: threads 0-31
// CHECK-NOT: check-collectives.mlir:136:
gpu.module @kernels {
  gpu.func @wgmma_under_warp(%n: i32) kernel attributes {nvvm.reqntid = array<i32: 256, 1, 1>} {
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %c0 = arith.constant 0 : i32
    %c32 = arith.constant 32 : i32
    %c128 = arith.constant 128 : i32
    %w = arith.floordivsi %tid, %c32 : i32
    %warp = cute_nvgpu.arch.make_warp_uniform(%w) : i32
    %is0 = arith.cmpi eq, %warp, %c0 : i32
    scf.if %is0 {
      nvvm.wgmma.fence.aligned
    }
    %wg = arith.floordivsi %tid, %c128 : i32
    %wg0 = arith.cmpi eq, %wg, %c0 : i32
    scf.if %wg0 {
      nvvm.wgmma.fence.aligned
    }
    gpu.return
  }
}

// -----
// `if i >= n: pass else: ...` with i = bidx * 128 + tidx and n a kernel argument: the
// threads past n leave (CuTeDSL has no early return); the barrier after is reached by
// a part of the CTA for every n that is not a multiple of 128.
// CHECK: check-collectives.mlir:[[# @LINE + 12]]:7: error: 'nvvm.barrier' {{.*}} reached under a condition that splits a CTA for some values of its uniform operands
// CHECK: check-collectives.mlir:[[# @LINE + 8]]:12: note: the condition that diverges: the `if` condition (else branch)
gpu.module @kernels {
  gpu.func @barrier_after_thread_exit(%n: i32) kernel attributes {nvvm.reqntid = array<i32: 128, 1, 1>} {
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %bid = nvvm.read.ptx.sreg.ctaid.x : i32
    %c128 = arith.constant 128 : i32
    %base = arith.muli %bid, %c128 : i32
    %i = arith.addi %base, %tid : i32
    %out = arith.cmpi sge, %i, %n : i32
    scf.if %out {
    } else {
      nvvm.barrier
    }
    gpu.return
  }
}

// -----
// A per-thread exit (nvvm.exit) makes what follows divergent for an instruction every lane
// must execute: a full-mask shfl.sync reads lanes that exited (PTX ISA: undefined).
// (This case was a bar.sync until issue 37: the PTX ISA's `exit` releases a barrier for all
// threads of the CTA that only exited threads hold up, so that one is fine; see below.)
// CHECK: check-collectives.mlir:[[# @LINE + 13]]:10: error: 'nvvm.shfl.sync' {{.*}} reached by only part of a warp: threads 0-99
// CHECK: note: the condition that diverges: a thread-dependent exit
gpu.module @kernels {
  gpu.func @shfl_after_exit() kernel attributes {nvvm.reqntid = array<i32: 128, 1, 1>} {
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %c100 = arith.constant 100 : i32
    %late = arith.cmpi sge, %tid, %c100 : i32
    scf.if %late {
      nvvm.exit
    }
    %c1 = arith.constant 1 : i32
    %c31 = arith.constant 31 : i32
    %full = arith.constant -1 : i32
    %x = nvvm.shfl.sync bfly %full, %tid, %c1, %c31 : i32 -> i32
    gpu.return
  }
}

// -----
// bar.sync 0 (all threads of the CTA) after some threads exited: the exiting threads release
// it (PTX ISA, `exit`), so the others pass; vote.sync waits only for the non-exited lanes of
// its mask. No finding.
// CHECK-NOT: barrier_after_exit
gpu.module @kernels {
  gpu.func @barrier_after_exit() kernel attributes {nvvm.reqntid = array<i32: 128, 1, 1>} {
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %c100 = arith.constant 100 : i32
    %late = arith.cmpi sge, %tid, %c100 : i32
    scf.if %late {
      nvvm.exit
    }
    nvvm.barrier
    %full = arith.constant -1 : i32
    %t = arith.constant 1 : i1
    %v = nvvm.vote.sync any %full, %t -> i1
    gpu.return
  }
}

// -----
// Unstructured control flow: a cf.cond_br on the lane.
// CHECK: check-collectives.mlir:[[# @LINE + 11]]:10: error: 'nvvm.shfl.sync' {{.*}} reached by only part of a warp: lanes 0-7 of every warp
gpu.module @kernels {
  gpu.func @shfl_after_cond_br(%v: f32) kernel attributes {nvvm.reqntid = array<i32: 64, 1, 1>} {
    %lane = nvvm.read.ptx.sreg.laneid : i32
    %c0 = arith.constant 0 : i32
    %c8 = arith.constant 8 : i32
    %c31 = arith.constant 31 : i32
    %full = arith.constant -1 : i32
    %low = arith.cmpi slt, %lane, %c8 : i32
    cf.cond_br %low, ^shuffle, ^done
  ^shuffle:
    %s = nvvm.shfl.sync idx %full, %v, %c0, %c31 : f32 -> f32
    cf.br ^done
  ^done:
    gpu.return
  }
}

// -----
// Inline PTX is read too: a bar.sync in inline assembly under `tidx < 64`.
// CHECK: check-collectives.mlir:[[# @LINE + 7]]:7: error: 'llvm.inline_asm' (PTX bar.sync) is a CTA collective reached by only part of the CTA: threads 0-63
gpu.module @kernels {
  gpu.func @inline_barrier() kernel attributes {nvvm.reqntid = array<i32: 128, 1, 1>} {
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %c64 = arith.constant 64 : i32
    %lt = arith.cmpi slt, %tid, %c64 : i32
    scf.if %lt {
      llvm.inline_asm has_side_effects "bar.sync 0;", "" : () -> ()
    }
    gpu.return
  }
}

// -----
// A value each thread loads through its own address cannot be decided: "may diverge",
// a warning, never an error (the run succeeds).
// CHECK: check-collectives.mlir:[[# @LINE + 9]]:7: warning: 'nvvm.barrier' {{.*}} reached under a condition that may diverge (data-dependent)
gpu.module @kernels {
  gpu.func @barrier_under_loaded_value(%p: !llvm.ptr<1>) kernel attributes {nvvm.reqntid = array<i32: 128, 1, 1>} {
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %q = llvm.getelementptr %p[%tid] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
    %x = llvm.load %q : !llvm.ptr<1> -> i32
    %c0 = arith.constant 0 : i32
    %pos = arith.cmpi sgt, %x, %c0 : i32
    scf.if %pos {
      nvvm.barrier
    }
    gpu.return
  }
}

// -----
// Named barrier 1 for 128 threads, but only warps 0-1 (64 threads) ever reach it.
// CHECK: check-collectives.mlir:[[# @LINE + 11]]:7: error: 'nvvm.barrier' {{.*}} (named barrier, 128 threads): it is the only use of barrier 1, and 64 threads reach it (threads 0-63), not 128
gpu.module @kernels {
  gpu.func @named_barrier_wrong_count() kernel attributes {nvvm.reqntid = array<i32: 128, 1, 1>} {
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %c1 = arith.constant 1 : i32
    %c2 = arith.constant 2 : i32
    %c32 = arith.constant 32 : i32
    %c128 = arith.constant 128 : i32
    %warp = arith.floordivsi %tid, %c32 : i32
    %w01 = arith.cmpi slt, %warp, %c2 : i32
    scf.if %w01 {
      nvvm.barrier id = %c1 number_of_threads = %c128
    }
    gpu.return
  }
}

// -----
// TMEM: nCols 16 (below 32), a dealloc given the shared-memory slot's own address, and
// tcgen05.alloc under `tidx == 0` (warp-wide).
// CHECK-DAG: check-collectives.mlir:[[# @LINE + 15]]:5: error: 'cute_nvgpu.arch.sm100.alloc_tmem' (PTX tcgen05.alloc) of 16 columns: nCols must be a power of two in [32, 512]
// CHECK-DAG: check-collectives.mlir:[[# @LINE + 17]]:7: error: 'cute_nvgpu.arch.sm100.alloc_tmem' (PTX tcgen05.alloc.sync.aligned) is a warp collective reached by only part of a warp: lane 0 of warp 0
// CHECK-DAG: check-collectives.mlir:[[# @LINE + 23]]:5: error: 'cute_nvgpu.arch.sm100.dealloc_tmem' (PTX tcgen05.dealloc) is given the address of the shared-memory slot
// WARN: check-collectives.mlir:[[# @LINE + 12]]:5: warning: 'cute_nvgpu.arch.sm100.alloc_tmem' (PTX tcgen05.alloc) of 16 columns: nCols must be a power of two in [32, 512]
gpu.module @kernels {
  gpu.func @tmem_rules(%slot: !cute.ptr<i32, smem, align<8>>) kernel attributes {nvvm.reqntid = array<i32: 128, 1, 1>} {
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %c0 = arith.constant 0 : i32
    %c16 = arith.constant 16 : i32
    %c32 = arith.constant 32 : i32
    %w = arith.floordivsi %tid, %c32 : i32
    %warp = cute_nvgpu.arch.make_warp_uniform(%w) : i32
    %is0 = arith.cmpi eq, %warp, %c0 : i32
    %t0 = arith.cmpi eq, %tid, %c0 : i32
    scf.if %is0 {
    cute_nvgpu.arch.sm100.alloc_tmem(%c16, %slot) [ cta_1] : i32, !cute.ptr<i32, smem, align<8>>
    }
    scf.if %t0 {
      cute_nvgpu.arch.sm100.alloc_tmem(%c32, %slot) [ cta_1] : i32, !cute.ptr<i32, smem, align<8>>
    }
    nvvm.barrier
    %a = cute.ptrtoint(%slot) : !cute.ptr<i32, smem, align<8>> to i32
    %b = cute.assume(%a) : (i32) -> !cute.i32<divby 16>
    %t = cute.inttoptr(%b) : !cute.i32<divby 16> to !cute.ptr<f32, tmem, align<16>>
    scf.if %is0 {
    cute_nvgpu.arch.sm100.dealloc_tmem(%t, %c32) [ cta_1] : !cute.ptr<f32, tmem, align<16>>, i32
    }
    gpu.return
  }
}

// -----
// TMEM: the dealloc only under `if n > 0` (a CTA-uniform test): a launch with n <= 0
// leaves the columns allocated. A dealloc in each branch of an `if` covers both paths.
// CHECK: check-collectives.mlir:[[# @LINE + 11]]:7: error: 'cute_nvgpu.arch.sm100.alloc_tmem' (PTX tcgen05.alloc) has no 'cute_nvgpu.arch.sm100.dealloc_tmem' on some path
// CHECK: check-collectives.mlir:[[# @LINE + 14]]:12: note: the condition that diverges
gpu.module @kernels {
  gpu.func @tmem_dealloc_skipped(%slot: !cute.ptr<i32, smem, align<8>>, %n: i32) kernel attributes {nvvm.reqntid = array<i32: 128, 1, 1>} {
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %c0 = arith.constant 0 : i32
    %c32 = arith.constant 32 : i32
    %w = arith.floordivsi %tid, %c32 : i32
    %warp = cute_nvgpu.arch.make_warp_uniform(%w) : i32
    %is0 = arith.cmpi eq, %warp, %c0 : i32
    scf.if %is0 {
      cute_nvgpu.arch.sm100.alloc_tmem(%c32, %slot) [ cta_1] : i32, !cute.ptr<i32, smem, align<8>>
    }
    nvvm.barrier
    %t = cute_nvgpu.arch.sm100.retrieve_tmem_ptr(%slot) : !cute.ptr<i32, smem, align<8>> -> !cute.ptr<f32, tmem, align<16>>
    %pos = arith.cmpi sgt, %n, %c0 : i32
    scf.if %pos {
      scf.if %is0 {
        cute_nvgpu.arch.sm100.dealloc_tmem(%t, %c32) [ cta_1] : !cute.ptr<f32, tmem, align<16>>, i32
      }
    }
    gpu.return
  }
}

// -----
// CHECK-NOT: check-collectives.mlir:{{(319|3[2-4][0-9])}}:
gpu.module @kernels {
  gpu.func @tmem_dealloc_on_both_paths(%slot: !cute.ptr<i32, smem, align<8>>, %n: i32) kernel attributes {nvvm.reqntid = array<i32: 128, 1, 1>} {
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %c0 = arith.constant 0 : i32
    %c32 = arith.constant 32 : i32
    %w = arith.floordivsi %tid, %c32 : i32
    %warp = cute_nvgpu.arch.make_warp_uniform(%w) : i32
    %is0 = arith.cmpi eq, %warp, %c0 : i32
    scf.if %is0 {
      cute_nvgpu.arch.sm100.alloc_tmem(%c32, %slot) [ cta_1] : i32, !cute.ptr<i32, smem, align<8>>
    }
    nvvm.barrier
    %t = cute_nvgpu.arch.sm100.retrieve_tmem_ptr(%slot) : !cute.ptr<i32, smem, align<8>> -> !cute.ptr<f32, tmem, align<16>>
    %pos = arith.cmpi sgt, %n, %c0 : i32
    scf.if %pos {
      scf.if %is0 {
        cute_nvgpu.arch.sm100.dealloc_tmem(%t, %c32) [ cta_1] : !cute.ptr<f32, tmem, align<16>>, i32
      }
    } else {
      scf.if %is0 {
        cute_nvgpu.arch.sm100.dealloc_tmem(%t, %c32) [ cta_1] : !cute.ptr<f32, tmem, align<16>>, i32
      }
    }
    gpu.return
  }
}

// -----
// barrier.cluster.arrive: every thread must arrive, from any site. Warps 0-1 and 2-3
// arriving from the two branches of an `if` is fine; warp 3 never arriving is not.
// CHECK: check-collectives.mlir:[[# @LINE + 14]]:7: error: 'nvvm.cluster.arrive.relaxed' (PTX barrier.cluster.arrive.relaxed): every thread of the cluster must arrive, and threads 96-127 reach no 'nvvm.cluster.arrive.relaxed' of this kernel
gpu.module @kernels {
  gpu.func @cluster_arrivals() kernel attributes {nvvm.reqntid = array<i32: 128, 1, 1>} {
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %c64 = arith.constant 64 : i32
    %c96 = arith.constant 96 : i32
    %low = arith.cmpi slt, %tid, %c64 : i32
    scf.if %low {
      nvvm.cluster.arrive
    } else {
      nvvm.cluster.arrive
    }
    %some = arith.cmpi slt, %tid, %c96 : i32
    scf.if %some {
      nvvm.cluster.arrive.relaxed
    }
    nvvm.cluster.wait
    gpu.return
  }
}

// -----
// A cluster barrier no thread uses (arrive and wait under a constant-false condition, as
// CUTLASS's Hopper examples write `if cute.size(cluster_shape) > 1:` for a 1x1 cluster): no error.
// CHECK-NOT: error: 'nvvm.cluster.arrive' {{.*}} threads 0-127 reach no
gpu.module @kernels {
  gpu.func @cluster_barrier_unused() kernel attributes {nvvm.reqntid = array<i32: 128, 1, 1>} {
    %size = arith.constant 1 : i32
    %c1 = arith.constant 1 : i32
    %multi = arith.cmpi sgt, %size, %c1 : i32
    scf.if %multi {
      nvvm.cluster.arrive
      nvvm.cluster.wait
    }
    gpu.return
  }
}

// -----
// A named barrier in inline PTX, reached by warpgroup 1 only: legal (its warps are whole;
// the count is not read from the text). Under `lane < 16` it splits warps: an error.
// CHECK: check-collectives.mlir:[[# @LINE + 13]]:7: error: 'llvm.inline_asm' (PTX bar.sync 1, 128;) is a warp collective reached by only part of a warp: lanes 0-15 of every warp
gpu.module @kernels {
  gpu.func @inline_named_barrier() kernel attributes {nvvm.reqntid = array<i32: 256, 1, 1>} {
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %lane = nvvm.read.ptx.sreg.laneid : i32
    %c16 = arith.constant 16 : i32
    %c128 = arith.constant 128 : i32
    %wg1 = arith.cmpi sge, %tid, %c128 : i32
    scf.if %wg1 {
      llvm.inline_asm has_side_effects "bar.sync 1, 128;", "" : () -> ()
    }
    %low = arith.cmpi slt, %lane, %c16 : i32
    scf.if %low {
      llvm.inline_asm has_side_effects "bar.sync 1, 128;", "" : () -> ()
    }
    gpu.return
  }
}

// -----
// A constant condition is the constant it is (issue 38, item 7): `scf.if %false` is dead code
// (a Python `if` on a closure constant, staged by CuTeDSL as a constant), no finding there;
// under `scf.if %true` a collective is as reached as outside it, so the lane test inside
// is what diverges.
// CHECK-NOT: 'nvvm.vote.sync'
// CHECK: check-collectives.mlir:[[# @LINE + 20]]:14: error: 'nvvm.shfl.sync' {{.*}} reached by only part of a warp: lanes 0-15 of every warp
// CHECK: check-collectives.mlir:[[# @LINE + 17]]:16: note: the condition that diverges: the `if` condition
gpu.module @kernels {
  gpu.func @constant_conditions() kernel attributes {nvvm.reqntid = array<i32: 128, 1, 1>} {
    %false = arith.constant false
    %true = arith.constant true
    %lane = nvvm.read.ptx.sreg.laneid : i32
    %full = arith.constant -1 : i32
    %c1 = arith.constant 1 : i32
    %c31 = arith.constant 31 : i32
    %c16 = arith.constant 16 : i32
    %low = arith.cmpi slt, %lane, %c16 : i32
    scf.if %false {
      scf.if %low {
        %v = nvvm.vote.sync any %full, %low -> i1
      }
    }
    scf.if %true {
      %inner = arith.cmpi slt, %lane, %c16 : i32
      scf.if %inner {
        %x = nvvm.shfl.sync bfly %full, %lane, %c1, %c31 : i32 -> i32
      }
    }
    gpu.return
  }
}
