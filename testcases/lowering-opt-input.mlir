// Input that is not MLIR text, or cannot be read, gets a located error and exit 1:
// never "internal error", never a traceback (lowering/files.py, lowering/pipeline.py).

// RUN: rm -rf %t && mkdir -p %t

// Bytes that are not UTF-8, on standard input: file:line:col of the first bad byte
// (the column counts bytes, as MLIR's do).
// RUN: printf 'func.func @f() {\n  return \377\n}\n' | not lowering-opt -p 'builtin.module(fptosi-to-ptx)' 2>&1 | filecheck %s --check-prefix=STDIN
// STDIN: <stdin>:2:10: error: not valid UTF-8 (byte 0xff): not MLIR text
// STDIN-NOT: internal error

// The issue's command: random bytes (almost surely not UTF-8; a NUL byte is also refused).
// RUN: head -c 300 /dev/urandom | not lowering-opt -p 'builtin.module(fptosi-to-ptx)' 2>&1 | filecheck %s --check-prefix=RANDOM
// RANDOM: <stdin>:{{[0-9]+}}:{{[0-9]+}}: error: {{not valid UTF-8|NUL byte}}
// RANDOM-NOT: internal error

// A binary file.
// RUN: printf '\177ELF\002\001\001\000\000\000\000\000\000\000\000\000\003\000>\000\001\000\000\000\300\047\000' > %t/binary
// RUN: not lowering-opt %t/binary 2>&1 | filecheck %s --check-prefix=BINARY
// BINARY: binary:1:8: error: NUL byte: not MLIR text
// BINARY-NOT: internal error

// A NUL byte, which MLIR's lexer would skip like a space.
// RUN: printf 'func.func @f() {\n  return\000\n}\n' > %t/nul.mlir
// RUN: not lowering-opt %t/nul.mlir 2>&1 | filecheck %s --check-prefix=NUL
// NUL: nul.mlir:2:9: error: NUL byte: not MLIR text

// Not UTF-8 in the middle of a line of a file, after multi-byte characters: byte columns.
// RUN: printf '// caf\303\251\n// \303\251\303\251 \303(\n' > %t/latin.mlir
// RUN: not lowering-opt %t/latin.mlir 2>&1 | filecheck %s --check-prefix=MIDLINE
// MIDLINE: latin.mlir:2:9: error: not valid UTF-8 (byte 0xc3): not MLIR text

// Empty input is an empty module, as in mlir-opt.
// RUN: printf '' | lowering-opt -p 'builtin.module(fptosi-to-ptx)' | filecheck %s --check-prefix=EMPTY
// EMPTY: module {
// EMPTY-NEXT: }

// A directory, a missing file.
// RUN: not lowering-opt %t 2>&1 | filecheck %s --check-prefix=DIR
// DIR: error: cannot read '{{.*}}': Is a directory
// RUN: not lowering-opt %t/missing.mlir 2>&1 | filecheck %s --check-prefix=MISSING
// MISSING: error: cannot read '{{.*}}missing.mlir': No such file or directory

// A pipeline nested 600 deep: a limit, located in the pipeline text.
// RUN: python -c "import sys; sys.stdout.write('builtin.module(' + 'func.func(' * 600 + 'cse' + ')' * 601)" > %t/deep.txt
// RUN: not python -c "import sys; from cute_lowering.opt import main; sys.exit(main(['%t/binary', '-p', open('%t/deep.txt').read()]))" 2>&1 | filecheck %s --check-prefix=DEEP
// DEEP: <pass-pipeline>:1:655: error: pipeline nested deeper than 64 levels: not supported
// DEEP-NOT: RecursionError
// DEEP-NOT: internal error

// IR nested deeper than MLIR's parser survives (5000 regions crashed it with SIGSEGV):
// a located limit error at the bracket beyond the limit.
// RUN: python -c "import sys; n = 5000; sys.stdout.write('func.func @f() {\n' + 'scf.execute_region {\n' * n + 'scf.yield\n' + '}\nscf.yield\n' * (n - 1) + '}\nreturn\n}\n')" > %t/deep.mlir
// RUN: not lowering-opt %t/deep.mlir 2>&1 | filecheck %s --check-prefix=DEEPIR
// DEEPIR: deep.mlir:1001:20: error: IR nested deeper than 1000 levels of brackets: not supported
// RUN: python -c "import sys; sys.stdout.write('func.func @f() -> i32 {\n  %%c = arith.constant ' + '[' * 100000 + '1' + ']' * 100000 + ' : i32\n  return %%c : i32\n}\n')" > %t/deep-attr.mlir
// RUN: not lowering-opt %t/deep-attr.mlir 2>&1 | filecheck %s --check-prefix=DEEPATTR
// DEEPATTR: deep-attr.mlir:2:1022: error: IR nested deeper than 1000 levels of brackets

// Standard output closed: an error, not a crash.
// RUN: printf 'func.func @f() {\n  return\n}\n' > %t/ok.mlir
// RUN: not python -c "import os, subprocess, sys; sys.exit(subprocess.run(['lowering-opt', sys.argv[1]], preexec_fn=lambda: os.close(1)).returncode)" %t/ok.mlir 2>&1 | filecheck %s --check-prefix=CLOSED
// CLOSED: error: cannot write standard output: it is closed
