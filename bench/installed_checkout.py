"""Is the `cute_lowering` that imports here this checkout's code? The GPU runs' guard against a stale install.

    python bench/installed_checkout.py      (exit 0: the same files; 1: it names the ones that differ)

On the GPU machine the package is a wheel installed with `pip install --target DIR` (the checkout's
folders are not a package). pip keeps what DIR already holds unless given `--upgrade`: a second
install of a changed checkout then leaves the old code in place, prints a warning nobody reads, and
every test, sweep and benchmark after it measures the old code (seen in session 26: a suite and a
sanitizer sweep ran on a knob default the tree no longer had). So `bench/gpu_suite.sh`,
`bench/sanitizer_sweep.py` and `bench/fmha_peers.py` compare, before they start, every module of
the installed package with the checkout's file it was built from (pyproject's packages and
package-dir say which), and refuse to run on a difference. An editable install (`pip install -e .`)
imports the checkout's own files and always passes. Imports nothing of the package (finding it does
not run it).
"""

from __future__ import annotations

import importlib.util
import pathlib
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]
TOP = "cute_lowering"


def source_dirs(root: pathlib.Path = ROOT) -> dict[str, pathlib.Path]:
    """{package: the checkout folder its modules come from}, from pyproject.toml's setuptools tables."""
    tool = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapping = tool.get("package-dir", {})
    dirs = {}
    for package in tool["packages"]:
        parts = package.split(".")
        # the longest prefix that package-dir names, then the rest as folders
        for cut in range(len(parts), 0, -1):
            prefix = ".".join(parts[:cut])
            if prefix in mapping:
                dirs[package] = root / mapping[prefix] / pathlib.Path(*parts[cut:])
                break
        else:
            dirs[package] = root / pathlib.Path(*parts)
    return dirs


def differences(root: pathlib.Path = ROOT) -> tuple[pathlib.Path | None, list[str]]:
    """(the installed package's folder, the checkout's modules that it lacks or holds otherwise:
    paths relative to the checkout); (None, [why]) when nothing named cute_lowering imports."""
    spec = importlib.util.find_spec(TOP)
    if spec is None or spec.origin is None:
        return None, [f"no {TOP} is importable (install the wheel, or pip install -e .)"]
    installed = pathlib.Path(spec.origin).resolve().parent
    dirs = source_dirs(root)
    if installed == dirs[TOP].resolve():
        return installed, []  # editable: the checkout's own files
    differ = []
    for package, folder in sorted(dirs.items()):
        target = installed.joinpath(*package.split(".")[1:])
        for source in sorted(folder.glob("*.py")):
            copy = target / source.name
            if not copy.is_file() or copy.read_bytes() != source.read_bytes():
                differ.append(str(source.relative_to(root)))
    return installed, differ


def refuse_stale(what: str) -> str | None:
    """None when the importable package is this checkout's, else the message that `what` (a
    script's name) prints before it exits: the files, and how to reinstall."""
    installed, differ = differences()
    if not differ:
        return None
    if installed is None:
        return f"{what}: {differ[0]}"
    shown = ", ".join(differ[:5]) + (f" and {len(differ) - 5} more" if len(differ) > 5 else "")
    return (
        f"{what}: the {TOP} that imports here ({installed}) is not this checkout's: {len(differ)} file(s) differ "
        f"({shown}). Reinstall it before running: pip wheel --no-deps -w dist . && "
        f"pip install --upgrade --no-deps --target {installed.parent} dist/{TOP}-*.whl (without --upgrade pip keeps the old copy)"
    )


def main() -> int:
    message = refuse_stale("installed_checkout")
    if message:
        print(message, file=sys.stderr)
        return 1
    installed, _ = differences()
    print(f"{TOP} at {installed} is this checkout's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
