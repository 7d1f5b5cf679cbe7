"""User files in and out: text that must be MLIR text, and writes that never damage a file.

Every tool that reads IR or writes a file the user named goes through here, so two
rules hold everywhere:

- Reading: the bytes must be UTF-8 text without NUL bytes. Otherwise the error says so
  at the first bad byte (`file:line:col`, columns in bytes like MLIR's), instead of the
  bindings' `TypeError` on a string they cannot encode, or MLIR skipping a NUL as if it
  were a space.
- Writing: the new content goes to a temporary file next to the destination, is
  flushed to disk, and replaces the destination in one `os.replace`. A run that fails
  before that leaves the destination exactly as it was (even when it is the input
  file); a reader never sees half a file. The destination keeps its permissions (and
  its owner, where allowed); a symlink keeps pointing where it did and its target is
  replaced. Destinations that are not regular files (`/dev/null`, a FIFO, a terminal)
  cannot be replaced and are written directly: there is no content there to lose.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile

from cute_lowering.diagnostics import Diagnostic, LoweringError, SourceLocation

STDIO = "-"
STDIN_NAME = "<stdin>"


class FileWriteError(Exception):
    """A destination that could not be written; the message names it and says why."""


def read_text(path: str) -> tuple[str, str]:
    """(display name, text) of `path` or of standard input for "-".

    Raises `LoweringError` with a located diagnostic for a file that cannot be read or
    is not text.
    """
    name = STDIN_NAME if path == STDIO else path
    try:
        if path == STDIO:
            data = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as f:
                data = f.read()
    except OSError as e:
        raise LoweringError(Diagnostic("error", f"cannot read '{name}': {e.strerror or e}")) from None
    return name, decode_text(data, name)


def decode_text(data: bytes, name: str) -> str:
    """`data` as text, or a `LoweringError` located at the first byte that is not text."""
    nul = data.find(b"\0")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        if not 0 <= nul < e.start:
            raise _not_text(data, e.start, name, f"not valid UTF-8 (byte 0x{data[e.start]:02x}): not MLIR text") from None
    if nul >= 0:
        raise _not_text(data, nul, name, "NUL byte: not MLIR text")
    return text


def _not_text(data: bytes, offset: int, name: str, message: str) -> LoweringError:
    line = data.count(b"\n", 0, offset) + 1
    col = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
    return LoweringError(Diagnostic("error", message, SourceLocation(name, line, col)))


def write_text(path: str, text: str) -> None:
    """Write `text` (UTF-8) to `path`, or to standard output for "-"; see the module docstring.

    Raises `FileWriteError`; the destination is then unchanged.
    """
    if path == STDIO:
        if sys.stdout is None:  # started with standard output closed (`>&-`)
            raise FileWriteError("cannot write standard output: it is closed")
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except BrokenPipeError:
            raise  # the reader went away (`| head`): the entry exits quietly (lowering/closed_pipe.py)
        except OSError as e:  # a full disk
            raise FileWriteError(f"cannot write standard output: {e.strerror or e}") from None
        return
    write_bytes(path, text.encode("utf-8"))


def check_writable(path: str) -> None:
    """Raise `FileWriteError` now if `write_text(path, ...)` could not succeed later: for a
    command that works for minutes before it writes (`lowering-repro reduce`)."""
    if path == STDIO:
        return
    target = os.path.realpath(path)
    if os.path.isdir(target):
        raise FileWriteError(f"cannot write '{path}': Is a directory")
    directory = os.path.dirname(target) or "."
    if not os.path.isdir(directory):
        raise FileWriteError(f"cannot write '{path}': No such file or directory")
    if not os.access(directory, os.W_OK | os.X_OK) and not (os.path.exists(target) and os.access(target, os.W_OK)):
        raise FileWriteError(f"cannot write '{path}': Permission denied")


def write_bytes(path: str, data: bytes) -> None:
    target = os.path.realpath(path)  # replace a symlink's target, not the link
    try:
        existing = os.stat(target)
    except FileNotFoundError:
        existing = None
    except OSError as e:
        raise FileWriteError(f"cannot write '{path}': {e.strerror or e}") from None
    mode = existing.st_mode if existing else None
    if mode is not None and stat.S_ISDIR(mode):
        raise FileWriteError(f"cannot write '{path}': Is a directory")
    if mode is not None and not stat.S_ISREG(mode):
        _write_in_place(path, target, data)
        return
    if mode is not None and not os.access(target, os.W_OK):
        # Replacing needs only the directory's permission: a read-only file would be
        # overwritten where `open(path, "w")` (and mlir-opt) refuse.
        raise FileWriteError(f"cannot write '{path}': Permission denied")
    directory = os.path.dirname(target) or "."
    try:
        fd, temporary = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(target)}.", suffix=".tmp")
    except OSError as e:
        # mkstemp's errors name the temporary file; say it of the destination. Where the file
        # exists, its directory is what refuses a new file (/proc: "No such file or
        # directory" of a file that is there): say that, not the bare strerror.
        if existing is not None:
            raise FileWriteError(f"cannot write '{path}': its directory '{directory}' does not take the new file"
                                 f" that replaces it in one step ({e.strerror or e})") from None
        raise FileWriteError(f"cannot write '{path}': {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(temporary, stat.S_IMODE(mode) if mode is not None else 0o666 & ~_umask())
        if existing is not None:
            _keep_owner(temporary, existing)
        os.replace(temporary, target)
    except BaseException as e:  # KeyboardInterrupt too: never leave the temporary behind
        try:
            os.unlink(temporary)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise FileWriteError(f"cannot write '{path}': {e.strerror or e}") from None
        raise
    _sync_directory(directory)


def _write_in_place(path: str, target: str, data: bytes) -> None:
    try:
        with open(target, "wb") as f:
            f.write(data)
    except OSError as e:
        raise FileWriteError(f"cannot write '{path}': {e.strerror or e}") from None


def _keep_owner(temporary: str, existing: os.stat_result) -> None:
    """The replacement keeps the file's owner and group where we may set them (root, or ours)."""
    if (existing.st_uid, existing.st_gid) == (os.getuid(), os.getgid()):
        return
    try:
        os.chown(temporary, existing.st_uid, existing.st_gid)
    except OSError:
        pass  # not allowed: the file becomes ours, as a rewrite by any editor would


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def _sync_directory(directory: str) -> None:
    """Make the rename itself durable; not every file system lets a directory be fsynced."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
