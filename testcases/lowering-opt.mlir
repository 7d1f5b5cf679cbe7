// The command line: pipelines mixing our passes with MLIR's, statistics, IR dumps,
// stdin and -o (the list of passes: lowering-opt-list.mlir).

// RUN: lowering-opt %S/Inputs/conversions.mlir -p 'builtin.module(fptosi-to-ptx{emit=ptx},bitcast-to-ptx,canonicalize)' | filecheck %s --check-prefix=MIX
// MIX-LABEL: func.func @conversions
// MIX-NEXT: nvvm.inline_ptx "cvt.rmi.s32.f32 {$w0}, {$r0};" ro(%arg0 : f32) -> i32
// MIX-NEXT: llvm.inline_asm "mov.b32 $0, $1;", "=r,f" %arg0 : (f32) -> i32
// MIX-NEXT: return

// A bare list means the same as builtin.module(...); input from stdin; output to a file.
// RUN: cat %S/Inputs/conversions.mlir | lowering-opt - -p 'fptosi-to-ptx,bitcast-to-ptx' -o %t.out
// RUN: filecheck %s --check-prefix=STDIN < %t.out
// STDIN: llvm.inline_asm "cvt.rmi.s32.f32 $0, $1;"
// STDIN: llvm.inline_asm "mov.b32 $0, $1;"

// RUN: lowering-opt %S/Inputs/conversions.mlir -p 'builtin.module(fptosi-to-ptx,bitcast-to-ptx)' --statistics 2>&1 >/dev/null | filecheck %s --check-prefix=STATS
// STATS: Pass statistics report
// STATS: 'fptosi-to-ptx'
// STATS-NEXT: (S) 1 rewritten - ops rewritten
// STATS-NEXT: (S) 0 left - ops left as they were (each has a remark)
// STATS-NEXT: (S) 1 folded - rounding ops folded into the cvt
// STATS: 'bitcast-to-ptx'
// STATS-NEXT: (S) 1 rewritten - ops rewritten

// RUN: lowering-opt %S/Inputs/conversions.mlir -p 'builtin.module(fptosi-to-ptx,canonicalize)' --print-ir-after-all 2>&1 >/dev/null | filecheck %s --check-prefix=DUMP
// DUMP: // -----// IR Dump After fptosi-to-ptx //----- //
// DUMP: llvm.inline_asm "cvt.rmi.s32.f32
// DUMP: arith.bitcast
// DUMP: // -----// IR Dump After canonicalize //----- //
// DUMP-NEXT: module {

// Without a pipeline the IR is parsed, verified and printed back.
// RUN: lowering-opt %S/Inputs/conversions.mlir | filecheck %s --check-prefix=ROUNDTRIP
// ROUNDTRIP: arith.fptosi
