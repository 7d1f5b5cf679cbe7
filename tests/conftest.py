import os
import re
import sys

import pytest

# The tests import the small kernels next to them (tests/cute_kernels.py).
sys.path.insert(0, os.path.dirname(__file__))

# In CI (CI=true; .ci/run sets it) torch is installed ('.[test,peers]' or '.[torch]'), so a
# test skipped because torch does not import is a broken environment, not a pass: it fails.
# GPU tests still skip (no GPU there): their reason is "no CUDA GPU", not an import.
TORCH_MISSING = re.compile(r"could not import 'torch'|^torch is not installed")


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _torch_skip(report) -> str | None:
    if not report.skipped or not isinstance(report.longrepr, tuple):
        return None
    reason = str(report.longrepr[2]).removeprefix("Skipped: ")
    return reason if TORCH_MISSING.search(reason) else None


def _fail_torch_skip(report, what: str) -> None:
    """In CI, turn a skip for a missing torch into a failure that says so."""
    reason = _in_ci() and _torch_skip(report)
    if reason:
        report.outcome = "failed"
        report.longrepr = f"CI=true but {what} was skipped for a missing torch ({reason}): install '.[torch]'"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _fail_torch_skip(outcome.get_result(), "the test")


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    _fail_torch_skip(outcome.get_result(), collector.nodeid)
