"""How the installed CuTeDSL words a libNVVM failure, for tests that assert one.

Most releases pass libNVVM's own log on (`unsupported operation`, `Instruction 'cvt with
.e2m1x2' not supported on .target 'sm_90a'`, `constraint 'n' expects an integer constant`).
Some report every libNVVM failure as the same bare text, `libNVVM extra log: NVVM backend
compilation failed`, with no log: measured by the reproducer matrix (`lowering-repro
matrix`), whose recorded errors (reproducers/*/case.json) show it for 4.6.2 and 4.7.0.
On those releases, and only there, a test that checks a libNVVM failure's wording accepts
the bare text: the kernel must still fail in libNVVM, but which failure it is cannot be read.
"""

from __future__ import annotations

import re

from cute_lowering.repro.cases import load_cases
from cute_lowering.targets import cutedsl_release

BARE = "NVVM backend compilation failed"
_BARE_RECORDED = "libNVVM extra log: " + BARE


def releases_without_the_libnvvm_log() -> set[str]:
    """The releases whose every recorded libNVVM failure is the bare text."""
    errors: dict[str, set[str]] = {}
    for case in load_cases().values():
        for release, cells in case.recorded.items():
            for cell in cells.values():
                if "NVVM_ERROR_COMPILATION" in cell.get("error", ""):
                    errors.setdefault(release, set()).add(cell["error"])
    return {release for release, seen in errors.items() if all(e.endswith(_BARE_RECORDED) for e in seen)}


HIDES_THE_LOG = cutedsl_release() in releases_without_the_libnvvm_log()


def libnvvm_error(pattern: str) -> str:
    """A regex for a libNVVM failure worded as `pattern` where the release passes the log on."""
    return f"(?:{pattern})|{re.escape(BARE)}" if HIDES_THE_LOG else pattern


def has_libnvvm_error(wording: str, error: str) -> bool:
    """`wording` (plain text) is in `error`, or the release hides the log and `error` is the bare text."""
    return wording in error or (HIDES_THE_LOG and BARE in error)
