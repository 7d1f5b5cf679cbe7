// lowering-repro: bad input gets a located error and exit code 1, never a traceback.

// RUN: not lowering-repro run no-such-case 2>&1 | filecheck %s --check-prefix=BADNAME
// BADNAME: lowering-repro: error: no reproducer named 'no-such-case' (see 'lowering-repro list')
// BADNAME-NOT: Traceback

// RUN: not lowering-repro run fp4-truncf-sm90a --arch sm_90a,sm90 2>&1 | filecheck %s --check-prefix=BADARCH
// BADARCH: <command-line>:1:8: error: unknown target 'sm90': CuTeDSL {{[0-9.]+}} accepts sm_80, {{.*}} (in '--arch sm_90a,sm90')
// BADARCH-NOT: Traceback

// RUN: not lowering-repro report no-such-case 2>&1 | filecheck %s --check-prefix=BADREPORT
// BADREPORT: lowering-repro: error: no reproducer named 'no-such-case'

// RUN: not lowering-repro reduce %S/does-not-exist.mlir --error x 2>&1 | filecheck %s --check-prefix=NOFILE
// NOFILE: lowering-repro: error: cannot read '{{.*}}does-not-exist.mlir': No such file or directory

// RUN: lowering-repro list | filecheck %s --check-prefix=LIST
// LIST-DAG: fp4-truncf-sm90a {{ *}}sm_90a,sm_80
// LIST-DAG: inline-ptx-f32-constant {{ *}}sm_90a,sm_100a,sm_80

// The status is the installed release's (lit.cfg.py: %libnvvm_log): where CuTeDSL hides
// libNVVM's log (4.6.2, 4.7.0) the case fails with the bare 'NVVM backend compilation
// failed', not its own error, and `run` says `changed`, as recorded for those releases.
// RUN: lowering-repro run inline-ptx-f32-constant --arch sm_100a | filecheck %s --check-prefixes=STATUS,STATUS-%libnvvm_log
// STATUS: CuTeDSL {{[0-9.]+}}, opt-level 3
// STATUS-passed-on: inline-ptx-f32-constant {{ *}}sm_100a {{ *}}reproduces {{ *}}ok
// STATUS-hidden: inline-ptx-f32-constant {{ *}}sm_100a {{ *}}changed {{ *}}ok

// A report only for a case that reproduces: on a target where it compiles, a refusal, exit 1.
// RUN: not lowering-repro report fp4-truncf-sm90a --arch sm_100a 2>&1 | filecheck %s --check-prefix=NOREPRO
// NOREPRO: lowering-repro: error: 'fp4-truncf-sm90a' does not reproduce on sm_100a with nvidia-cutlass-dsl {{[0-9.]+}}: it compiles. No report written.
// NOREPRO-NOT: Traceback
