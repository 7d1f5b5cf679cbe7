"""`python -m cute_lowering.run script.py [args...]`: run an unmodified CuTeDSL script with our passes.

The pipeline is `CUTE_LOWERING_PIPELINE` if set, else `auto` (what each target needs).
"""

from __future__ import annotations

import os
import runpy
import sys

from cute_lowering.closed_pipe import quiet_on_closed_stdout
from cute_lowering.hook import AUTO, ENV_PIPELINE, install, install_from_env


@quiet_on_closed_stdout
def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 0 if argv else 2
    script = argv[0]
    if not os.path.exists(script):
        print(f"cute_lowering.run: error: no such script: '{script}'", file=sys.stderr)
        return 2
    try:
        if install_from_env() is None:
            install(AUTO)
    except Exception as e:  # a malformed CUTE_LOWERING_PIPELINE: say so plainly
        print(f"cute_lowering.run: error: {ENV_PIPELINE}: {e}", file=sys.stderr)
        return 2
    sys.argv = list(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
