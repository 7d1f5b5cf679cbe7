"""`lowering/files.py`: what the lit tests cannot do from a shell (a write failing midway)."""

from __future__ import annotations

import os

import pytest

from cute_lowering import files
from cute_lowering.diagnostics import LoweringError


def test_a_write_failing_midway_leaves_the_file_and_no_temporary(tmp_path, monkeypatch):
    destination = tmp_path / "out.mlir"
    destination.write_text("KEEP\n")

    def full_disk(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "fsync", full_disk)
    with pytest.raises(files.FileWriteError, match=r"cannot write '.*out.mlir': No space left on device"):
        files.write_text(str(destination), "new content\n")
    assert destination.read_text() == "KEEP\n"
    assert sorted(os.listdir(tmp_path)) == ["out.mlir"]


def test_an_interrupted_write_leaves_no_temporary(tmp_path, monkeypatch):
    destination = tmp_path / "out.mlir"

    def interrupted(source, target):
        raise KeyboardInterrupt

    monkeypatch.setattr(files.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        files.write_text(str(destination), "x\n")
    assert os.listdir(tmp_path) == []


def test_a_new_file_gets_the_umask_mode(tmp_path):
    old = os.umask(0o027)
    try:
        files.write_text(str(tmp_path / "new.mlir"), "x\n")
    finally:
        os.umask(old)
    assert (tmp_path / "new.mlir").stat().st_mode & 0o777 == 0o640


def test_decode_text_locates_the_first_bad_byte():
    with pytest.raises(LoweringError) as bad:
        files.decode_text("ok\n\u00e9\u00e9 x".encode() + b"\xfe", "f.mlir")
    assert str(bad.value) == "f.mlir:2:7: error: not valid UTF-8 (byte 0xfe): not MLIR text"
    with pytest.raises(LoweringError) as nul:  # the earlier of the two faults is the one reported
        files.decode_text(b"a\0\xff", "g.mlir")
    assert str(nul.value) == "g.mlir:1:2: error: NUL byte: not MLIR text"
    assert files.decode_text("caf\u00e9\n".encode(), "h.mlir") == "caf\u00e9\n"


def test_check_writable(tmp_path):
    files.check_writable(str(tmp_path / "fine.mlir"))
    files.check_writable("-")
    with pytest.raises(files.FileWriteError, match="No such file or directory"):
        files.check_writable(str(tmp_path / "missing" / "x.mlir"))
    with pytest.raises(files.FileWriteError, match="Is a directory"):
        files.check_writable(str(tmp_path))


def test_a_dump_directory_that_cannot_be_written_is_the_users_error(tmp_path, monkeypatch):
    """CUTE_LOWERING_DUMP naming a place that cannot be a directory: our PreloweringError
    naming the setting, not CuTeDSL's "a bug in the DSL" around an OSError."""
    import cutlass.cute as cute
    from cute_kernels import CASES

    import cute_lowering
    from cute_lowering.hook import PreloweringError

    launcher, arguments = CASES["to_int32"]
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("CUTE_LOWERING_DUMP", str(blocker / "dumps"))
    with pytest.raises(Exception) as caught:
        with cute_lowering.prelowering():
            cute.compile(launcher, *arguments(), options="--gpu-arch sm_90a")
    assert isinstance(caught.value, PreloweringError), repr(caught.value)
    assert f"CUTE_LOWERING_DUMP={blocker / 'dumps'}: " in str(caught.value)
