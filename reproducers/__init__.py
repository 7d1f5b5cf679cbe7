"""Data, not code: the reproducer folders, installed with the package as `cute_lowering.reproducers`
(pyproject's package-dir) so that `lowering-repro` finds them from a wheel too
(`cute_lowering/repro/cases.py`). Each `<name>/repro.py` is a script of its own."""
