"""Command-line entries stop quietly when their reader goes away (`lowering-repro list | head -1`).

A POSIX tool whose standard output is a pipe that the reader closed dies of SIGPIPE:
no message, exit status 141 in the shell. Python ignores SIGPIPE and raises
`BrokenPipeError` instead, at the write or at the final flush, which our entries would
report as an internal error (or a traceback). Restoring SIGPIPE's default action is
not an option: `lowering-repro` writes to its compile workers' pipes, and a worker that
died must be reported, not kill the tool. So `quiet_on_closed_stdout` wraps an entry's
`main`: a `BrokenPipeError` is quiet only when standard output itself is the closed pipe
(checked with poll, which reports an error on a pipe whose reader is gone).
"""

from __future__ import annotations

import functools
import os
import select
import signal
import sys
from typing import Callable

# what the shell reports for a process killed by SIGPIPE, as `seq 1 100000 | head -1`
# reports under `set -o pipefail`
CLOSED_PIPE_STATUS = 128 + signal.SIGPIPE


def stdout_closed(error: BaseException | None = None) -> bool:
    """Whether standard output is a pipe whose reader has gone (and `error`, if given, is
    the `BrokenPipeError` that shows it, not one from another pipe)."""
    if error is not None and not isinstance(error, BrokenPipeError):
        return False
    stream = sys.__stdout__
    if stream is None:
        return False
    try:
        poller = select.poll()
        poller.register(stream.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (OSError, ValueError):  # no descriptor (a closed or replaced stream)
        return False


def _silence_stdout() -> None:
    """Point standard output at /dev/null, so that the interpreter's own flush at exit
    does not print 'Exception ignored ... BrokenPipeError'."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.__stdout__.fileno())
        os.close(devnull)
    except (OSError, AttributeError, ValueError):
        pass


def quiet_on_closed_stdout(main: Callable[..., int]) -> Callable[..., int]:
    """`main(argv)`, exiting with CLOSED_PIPE_STATUS and no message when its reader closed
    standard output (argparse's --help included: its SystemExit is flushed here too)."""

    @functools.wraps(main)
    def entry(*args, **kwargs) -> int:
        try:
            try:
                return main(*args, **kwargs)
            finally:
                if sys.stdout is not None:
                    sys.stdout.flush()  # the last buffered lines meet the closed pipe here
        except BrokenPipeError as e:
            if not stdout_closed(e):
                raise
            _silence_stdout()
            return CLOSED_PIPE_STATUS

    return entry
