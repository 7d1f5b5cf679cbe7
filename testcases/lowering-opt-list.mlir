// lowering-opt --list-passes: our passes by stage (lowering/stages.py), each with its options.

// RUN: lowering-opt --list-passes | filecheck %s --check-prefix=LIST
// LIST: Pre-stage passes (on the traced module, before CuTeDSL's pipeline):
// LIST-NEXT: bitcast-to-ptx: Rewrite arith.bitcast/llvm.bitcast
// LIST-NEXT: emit=<ptx|asm> (default asm)
// LIST: fptosi-to-ptx: Rewrite arith.fptosi/fptoui
// LIST-NEXT: rounding=<auto|rzi|rni|rmi|rpi> (default auto)
// LIST-NEXT: emit=<ptx|asm> (default asm)
// LIST: inline-asm-to-ptx: Rewrite pure, register-only llvm.inline_asm
// LIST: ptx-float-operands: Copy float-constant operands of nvvm.inline_ptx into registers
// LIST: Post-stage passes (on the LLVM/NVVM module CuTeDSL's cute-to-nvvm{llvm-only=true} leaves, before PTX):
// LIST-NEXT: wgmma-desc-hoist: Compute wgmma descriptors where their inputs are defined
// LIST-NEXT: operands=<all|a> (default all)
// LIST-NEXT: wgmma-report: Report how each wgmma's shared-memory descriptors are formed

