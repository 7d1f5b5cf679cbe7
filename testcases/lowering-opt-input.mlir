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
// RUN: not python -c "import sys; from lowering.opt import main; sys.exit(main(['%t/binary', '-p', open('%t/deep.txt').read()]))" 2>&1 | filecheck %s --check-prefix=DEEP
// DEEP: <pass-pipeline>:1:655: error: pipeline nested deeper than 64 levels: not supported
// DEEP-NOT: RecursionError
// DEEP-NOT: internal error
