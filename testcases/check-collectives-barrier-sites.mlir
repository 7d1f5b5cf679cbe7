// RUN: not lowering-opt %s --split-input-file -p 'builtin.module(check-collectives{pedantic=true})' -o /dev/null 2>&1 | filecheck %s
// RUN: not lowering-opt %s --split-input-file -p 'builtin.module(check-collectives)' -o /dev/null 2>&1 | filecheck %s --check-prefix=DEFAULT

// Named barriers across their sites (issue 37). `nvvm.barrier` is `bar.sync` =
// `barrier.sync.aligned`, `nvvm.barrier.arrive` is `bar.arrive` = `barrier.arrive.aligned`.
// PTX ISA (bar, barrier): ".aligned ... all threads in CTA will execute the same barrier{.cta}
// instruction", and "Different warps may execute different forms of the barrier{.cta}
// instruction using the same barrier name and thread count" (sync + arrive: the producer/
// consumer example). So one phase may mix a bar.arrive site and a bar.sync site, never two
// bar.sync sites (nor two bar.arrive sites). synccheck reports such a phase (and stops the
// kernel), yet CuTeDSL's own TmemAllocator emits it (named barriers count arrivals by warp),
// so only pedantic=true reports the two-site cases below; without it
// the over-count errors further down are all there is (the second RUN line).
// DEFAULT-NOT: two bar.sync sites
// DEFAULT-NOT: traced twice
// DEFAULT: error: 'nvvm.barrier.arrive' {{.*}} are the 2 sites of named barrier 1, which counts 96 threads
// DEFAULT-NOT: two bar.sync sites

// Barrier 1 (128 threads) synced by warps 0-1 at one site and warps 2-3 at another: 128
// threads, the count, but one phase at two bar.sync instructions (synccheck on the H200:
// "Divergent thread(s) in block").
// CHECK: check-collectives-barrier-sites.mlir:[[# @LINE + 13]]:7: error: 'nvvm.barrier' (PTX bar.sync) of named barrier 1 (128 threads) is one of two bar.sync sites of that id, reached here by threads 0-63 and at check-collectives-barrier-sites.mlir:[[# @LINE + 15]] by threads 64-127: those threads can meet in one phase, and bar.sync is barrier.sync.aligned
// CHECK: check-collectives-barrier-sites.mlir:[[# @LINE + 10]]:12: note: the condition that diverges: the `if` condition
gpu.module @kernels {
  gpu.func @two_sync_sites(%n: i32) kernel attributes {nvvm.reqntid = array<i32: 128, 1, 1>} {
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %c1 = arith.constant 1 : i32
    %c2 = arith.constant 2 : i32
    %c32 = arith.constant 32 : i32
    %c128 = arith.constant 128 : i32
    %w = arith.floordivsi %tid, %c32 : i32
    %warp = cute_nvgpu.arch.make_warp_uniform(%w) : i32
    %low = arith.cmpi slt, %warp, %c2 : i32
    scf.if %low {
      nvvm.barrier id = %c1 number_of_threads = %c128
    } else {
      nvvm.barrier id = %c1 number_of_threads = %c128
    }
    gpu.return
  }
}

// -----
// One source line (a loop body or helper CuTeDSL traced twice) run by warpgroup 0 at one
// copy and warpgroup 1 at the other, at the same time: two instructions, so the same error,
// and it says why the two sites share a line.
// CHECK: kernel.py:12:8: error: 'nvvm.barrier' (PTX bar.sync) of named barrier 1 (256 threads) is one of two bar.sync sites of that id, reached here by threads 0-127 and at kernel.py:12 by threads 128-255 (the same source line, traced twice by CuTeDSL: two instructions)
gpu.module @kernels {
  gpu.func @one_line_two_copies() kernel attributes {nvvm.reqntid = array<i32: 256, 1, 1>} {
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %c1 = arith.constant 1 : i32
    %c128 = arith.constant 128 : i32
    %c256 = arith.constant 256 : i32
    %wg = arith.floordivsi %tid, %c128 : i32
    %group = cute_nvgpu.arch.make_warp_uniform(%wg) : i32
    %c0 = arith.constant 0 : i32
    %first = arith.cmpi eq, %group, %c0 : i32
    scf.if %first {
      "nvvm.barrier"(%c1, %c256) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (i32, i32) -> () loc(#body)
    } else {
      "nvvm.barrier"(%c1, %c256) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (i32, i32) -> () loc(#body)
    }
    gpu.return
  }
}
#body = loc("kernel.py":12:8)

// -----
// Near misses, no diagnostic:
// - warpgroup 0 bar.arrive(1, 256) at one site, warpgroup 1 bar.sync(1, 256) at another (the
//   PTX ISA's producer/consumer example; ran clean under synccheck on the H200);
// - warps 0-1 bar.sync(2, 64) at two sites one after the other (each phase at one site);
// - the same line traced twice, both copies run in turn by the same warps 0-1.
// CHECK-NOT: {{check-collectives-barrier-sites.mlir:(6[7-9]|[7-9][0-9]):|helper.py}}
gpu.module @kernels {
  gpu.func @legal_sites() kernel attributes {nvvm.reqntid = array<i32: 256, 1, 1>} {
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c2 = arith.constant 2 : i32
    %c3 = arith.constant 3 : i32
    %c32 = arith.constant 32 : i32
    %c64 = arith.constant 64 : i32
    %c128 = arith.constant 128 : i32
    %c256 = arith.constant 256 : i32
    %wg = arith.floordivsi %tid, %c128 : i32
    %group = cute_nvgpu.arch.make_warp_uniform(%wg) : i32
    %first = arith.cmpi eq, %group, %c0 : i32
    scf.if %first {
      nvvm.barrier.arrive id = %c1 number_of_threads = %c256
    } else {
      nvvm.barrier id = %c1 number_of_threads = %c256
    }
    %w = arith.floordivsi %tid, %c32 : i32
    %warp = cute_nvgpu.arch.make_warp_uniform(%w) : i32
    %low = arith.cmpi slt, %warp, %c2 : i32
    scf.if %low {
      "nvvm.barrier"(%c3, %c64) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (i32, i32) -> () loc(#helper)
      "nvvm.barrier"(%c3, %c64) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (i32, i32) -> () loc(#helper)
      nvvm.barrier id = %c2 number_of_threads = %c64
      nvvm.barrier id = %c2 number_of_threads = %c64
    }
    gpu.return
  }
}
#helper = loc("helper.py":7:4)

// -----
// More threads than the count: warp 0 bar.arrive(1, 96), warps 1-3 bar.sync(1, 96): 128
// arrive; the barrier completes at 96 and is reinitialized (PTX ISA), so the last 32 wait
// for a phase that never fills.
// CHECK: check-collectives-barrier-sites.mlir:[[# @LINE + 13]]:7: error: 'nvvm.barrier.arrive' {{.*}} are the 2 sites of named barrier 1, which counts 96 threads, and 128 arrive there (threads 0-127): the barrier completes at every 96 arrivals (PTX ISA: it is then reinitialized), so 1 phase completes and the last 32 threads to arrive wait for a phase that never fills
// CHECK: check-collectives-barrier-sites.mlir:[[# @LINE + 10]]:17: note: the condition that diverges: the `if` condition
gpu.module @kernels {
  gpu.func @over_count() kernel attributes {nvvm.reqntid = array<i32: 128, 1, 1>} {
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c32 = arith.constant 32 : i32
    %c96 = arith.constant 96 : i32
    %w = arith.floordivsi %tid, %c32 : i32
    %warp = cute_nvgpu.arch.make_warp_uniform(%w) : i32
    %producer = arith.cmpi eq, %warp, %c0 : i32
    scf.if %producer {
      nvvm.barrier.arrive id = %c1 number_of_threads = %c96
    } else {
      nvvm.barrier id = %c1 number_of_threads = %c96
    }
    gpu.return
  }
}

// -----
// Its near miss: warp 3 exits first, so 96 threads arrive (warp 0's arrive, warps 1-2's sync).
// CHECK-NOT: check-collectives-barrier-sites.mlir:{{(12[89]|1[3-5][0-9])}}:
gpu.module @kernels {
  gpu.func @over_count_after_exit() kernel attributes {nvvm.reqntid = array<i32: 128, 1, 1>} {
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c3 = arith.constant 3 : i32
    %c32 = arith.constant 32 : i32
    %c96 = arith.constant 96 : i32
    %w = arith.floordivsi %tid, %c32 : i32
    %warp = cute_nvgpu.arch.make_warp_uniform(%w) : i32
    %last = arith.cmpi eq, %warp, %c3 : i32
    scf.if %last {
      nvvm.exit
    }
    %producer = arith.cmpi eq, %warp, %c0 : i32
    scf.if %producer {
      nvvm.barrier.arrive id = %c1 number_of_threads = %c96
    } else {
      nvvm.barrier id = %c1 number_of_threads = %c96
    }
    gpu.return
  }
}
