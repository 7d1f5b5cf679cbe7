// lowering-repro reads and writes user files as lowering-opt does (lowering/files.py):
// input that is not UTF-8 text or does not parse gets a located error; an output that
// cannot be written is an error of the user's (exit 1), never "internal error", and an
// existing file is left as it was.

// RUN: rm -rf %t && mkdir -p %t
// RUN: printf 'func.func @f() {\n  return \377\n}\n' > %t/binary.mlir
// RUN: not lowering-repro reduce %t/binary.mlir --error x 2>&1 | filecheck %s --check-prefix=UTF8
// UTF8: binary.mlir:2:10: error: not valid UTF-8 (byte 0xff): not MLIR text
// UTF8-NOT: internal error

// RUN: echo 'func.func @f() { return' > %t/syntax.mlir
// RUN: not lowering-repro reduce %t/syntax.mlir --error x 2>&1 | filecheck %s --check-prefix=SYNTAX
// SYNTAX: syntax.mlir:1:24: error: expected operation name in quotes

// RUN: not lowering-repro report fp4-truncf-sm90a -o %t 2>&1 | filecheck %s --check-prefix=ISDIR
// ISDIR: lowering-repro: error: cannot write '{{.*}}': Is a directory
// ISDIR-NOT: internal error

// reduce checks its -o before reducing (minutes, for a real kernel), not after.
// RUN: not lowering-repro reduce %S/../reproducers/fp4-truncf-sm90a/reduced-from-kernel.mlir --error x -o %t/no-such-dir/small.mlir 2>&1 | filecheck %s --check-prefix=EARLY
// EARLY: lowering-repro: error: cannot write '{{.*}}no-such-dir/small.mlir': No such file or directory
// EARLY-NOT: does not fail
