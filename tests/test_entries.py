"""Every command-line and `python -m` entry survives a closed pipe and runs without runpy's warning
(issue 38, item 3).

`lowering-repro list | head -1` said `internal error: BrokenPipeError`; `python -m
cute_lowering.targets | head` printed a traceback; every `python -m cute_lowering.targets` printed
runpy's `RuntimeWarning: 'cute_lowering.targets' found in sys.modules after import of package
'lowering'` (the package imported it, through the passes). A closed standard output now ends the
entry quietly with the shell's SIGPIPE status (lowering/closed_pipe.py); a broken pipe
that is not standard output is still reported.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cute_lowering.closed_pipe import CLOSED_PIPE_STATUS, quiet_on_closed_stdout

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
EXAMPLE = str(REPO / "examples" / "exp2_on_fma.mlir")

# (id, argv): each prints to standard output
ENTRIES = [
    ("lowering-opt-list-passes", [str(BIN / "lowering-opt"), "--list-passes"]),
    ("lowering-opt-ir", [str(BIN / "lowering-opt"), EXAMPLE, "-p", "builtin.module(fptosi-to-ptx)"]),
    ("lowering-repro-list", [str(BIN / "lowering-repro"), "list"]),
    ("m-cute_lowering.targets", [sys.executable, "-m", "cute_lowering.targets"]),
]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONWARNINGS", None)
    return env


@pytest.mark.parametrize("argv", [a for _, a in ENTRIES], ids=[i for i, _ in ENTRIES])
def test_closed_pipe_is_quiet(argv):
    """The reader is gone before the entry writes its first byte: no message, status 141."""
    if not Path(argv[0]).exists():
        pytest.skip(f"{argv[0]} is not installed in this venv")
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(), cwd=REPO)
    proc.stdout.close()  # long before the interpreter has started: every write meets a closed pipe
    _, err = proc.communicate(timeout=300)
    assert err.decode() == "", err.decode()
    assert proc.returncode == CLOSED_PIPE_STATUS


def test_python_m_lowering_targets_has_no_runpy_warning():
    """With warnings as errors, runpy's warning would fail it (the other entries are covered by
    the invariant below: the package imports none of them)."""
    proc = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-m", "cute_lowering.targets"],
                          capture_output=True, text=True, env=_env(), cwd=REPO, timeout=300)
    assert "RuntimeWarning" not in proc.stderr and "found in sys.modules" not in proc.stderr, proc.stderr
    assert proc.returncode == 0 and proc.stdout.startswith("CuTeDSL "), proc.stderr


def test_the_package_imports_no_module_that_runs_as_main():
    """runpy warns when the module it runs was imported by the package first: `import cute_lowering`
    must not import any `python -m` entry (cute_lowering.targets came in through the passes'
    `arch=` option); yet the package's names work as before."""
    code = ("import sys, cute_lowering\n"
            "entries = ['cute_lowering.targets', 'cute_lowering.opt', 'cute_lowering.run', 'cute_lowering.repro.cli']\n"
            "imported = [m for m in entries if m in sys.modules]\n"
            "assert not imported, imported\n"
            "from cute_lowering import get_pass, run_pipeline, prelowering\n"
            "assert get_pass('truncf-to-select') is not None\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr


def test_another_broken_pipe_is_not_hidden(monkeypatch):
    """A BrokenPipeError from a worker's pipe, with standard output fine, is not taken for
    a closed standard output: it reaches the entry's own error handling."""
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    r, w = os.pipe()
    os.close(r)

    @quiet_on_closed_stdout
    def main(argv=None):
        os.write(w, b"x")  # EPIPE on this pipe, not on standard output
        return 0

    try:
        with pytest.raises(BrokenPipeError):
            main([])
    finally:
        os.close(w)


def test_internal_error_still_reported_for_a_worker_pipe(tmp_path):
    """lowering-repro's last-resort handler keeps saying 'internal error' for a broken pipe that
    is not standard output (only our own reader going away is quiet)."""
    code = ("import os, sys\n"
            "from cute_lowering.repro import cli\n"
            "def boom(args):\n"
            "    r, w = os.pipe(); os.close(r); os.write(w, b'x')\n"
            "cli.COMMANDS['list'] = boom\n"
            "sys.exit(cli.main(['list']))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=300)
    assert proc.returncode == 2 and "internal error: BrokenPipeError" in proc.stderr, proc.stderr
