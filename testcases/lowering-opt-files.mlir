// lowering-opt never damages a file: a failed run leaves -o's destination exactly as
// it was (also when it is the input file, and with --split-input-file when one chunk
// fails); a successful run replaces it in one step, keeping its permissions and
// leaving no temporary file behind (lowering/files.py).

// RUN: rm -rf %t && mkdir -p %t
// RUN: echo 'func.func @broken() { return' > %t/bad.mlir
// RUN: echo 'func.func @good() { return }' > %t/good.mlir

// A failed run leaves the destination as it was.
// RUN: echo KEEP > %t/out.mlir
// RUN: not lowering-opt %t/bad.mlir -p 'builtin.module(fptosi-to-ptx)' -o %t/out.mlir 2>&1 | filecheck %s --check-prefix=SYNTAX
// SYNTAX: bad.mlir:1:29: error:
// RUN: filecheck --input-file=%t/out.mlir %s --check-prefix=KEPT
// KEPT: {{^KEEP$}}

// A file that exists in a directory that takes no new file (/proc, as root; another user is
// refused first): said as such, not "No such file or directory" of a file that is there.
// RUN: not lowering-opt %t/good.mlir -o /proc/version 2>&1 | filecheck %s --check-prefix=PROC
// PROC: error: cannot write '/proc/version': {{its directory '/proc' does not take the new file that replaces it in one step|Permission denied}}
// RUN: head -c 5 /proc/version | filecheck %s --check-prefix=PROCKEPT
// PROCKEPT: Linux
// (Here, before the first `diff`: lit's internal shell sets PYTHONPATH to lit's own folder
// for the rest of a test once it runs its Python `diff`/`cat`.)

// ... also when -o is the input file itself.
// RUN: cp %t/bad.mlir %t/self.mlir
// RUN: not lowering-opt %t/self.mlir -o %t/self.mlir
// RUN: diff %t/bad.mlir %t/self.mlir

// ... also when the pipeline fails rather than the parser.
// RUN: cp %t/good.mlir %t/same.mlir
// RUN: not lowering-opt %t/same.mlir -p 'builtin.module(canonicalise)' -o %t/same.mlir
// RUN: diff %t/good.mlir %t/same.mlir

// ... and with --split-input-file when one chunk of this file fails: nothing partial.
// RUN: echo KEEP > %t/split.mlir
// RUN: not lowering-opt %s --split-input-file -p 'builtin.module(fptosi-to-ptx)' -o %t/split.mlir
// RUN: filecheck --input-file=%t/split.mlir %s --check-prefix=KEPT

// A successful run replaces the destination, keeps its mode, leaves no temporary.
// RUN: echo OLD > %t/mode.mlir && chmod 640 %t/mode.mlir
// RUN: lowering-opt %t/good.mlir -o %t/mode.mlir
// RUN: filecheck --input-file=%t/mode.mlir %s --check-prefix=REPLACED
// REPLACED: func.func @good
// RUN: stat -c %%a %t/mode.mlir | filecheck %s --check-prefix=MODE
// MODE: {{^640$}}
// RUN: ls -A %t | filecheck %s --check-prefix=NOTEMP
// NOTEMP-NOT: .tmp

// A symlink keeps pointing where it did; its target gets the result.
// RUN: echo OLD > %t/target.mlir && ln -s %t/target.mlir %t/link.mlir
// RUN: lowering-opt %t/good.mlir -o %t/link.mlir
// RUN: test -L %t/link.mlir
// RUN: filecheck --input-file=%t/target.mlir %s --check-prefix=REPLACED

// A destination that is not a regular file is written, not replaced.
// RUN: lowering-opt %t/good.mlir -o /dev/null
// RUN: test -c /dev/null

// A destination that cannot be written: a located error, exit 1, nothing else touched.
// RUN: not lowering-opt %t/good.mlir -o %t/no-such-dir/out.mlir 2>&1 | filecheck %s --check-prefix=NODIR
// NODIR: error: cannot write '{{.*}}no-such-dir/out.mlir': No such file or directory
// NODIR-NOT: internal error
// RUN: not lowering-opt %t/good.mlir -o %t 2>&1 | filecheck %s --check-prefix=ISDIR
// ISDIR: error: cannot write '{{.*}}': Is a directory

func.func @first(%x: f32) -> i32 {
  %0 = arith.fptosi %x : f32 to i32
  return %0 : i32
}

// -----
func.func @second(%x: f32) -> i32 {
  %0 = arith.fptosy %x : f32 to i32
  return %0 : i32
}
