# lit configuration for the pass tests: `lit testcases` (lowering-opt and filecheck on PATH).
import os
import shutil

import lit.formats

config.name = "cute-lowering"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.test_source_root, "Output")

for name in ("PATH", "PYTHONPATH", "HOME", "VIRTUAL_ENV"):
    if name in os.environ:
        config.environment[name] = os.environ[name]

for tool in ("lowering-opt", "lowering-repro", "filecheck"):
    if shutil.which(tool, path=os.environ.get("PATH")) is None:
        lit_config.fatal(f"'{tool}' is not on PATH: install the project with its test extras first")

# Our package is imported as installed (cute_lowering; `pip install -e .` in a checkout), never
# from this checkout's folders: say so when the installed one is another checkout's.
import importlib.util

_spec = importlib.util.find_spec("cute_lowering")
if _spec is None:
    lit_config.fatal("'cute_lowering' does not import: install the project with its test extras first")
_here = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", "lowering"))
if os.path.dirname(os.path.realpath(_spec.origin)) != _here:
    lit_config.warning(f"cute_lowering comes from {os.path.dirname(_spec.origin)}, not this checkout ({_here})")

# Whether the installed CuTeDSL passes libNVVM's log on or reports every libNVVM failure as
# the bare 'NVVM backend compilation failed' (4.6.2, 4.7.0: tests/libnvvm_wording.py, from
# the reproducers' recorded errors): %libnvvm_log is 'passed-on' or 'hidden', for check
# prefixes whose expectation differs by release.
import sys
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from libnvvm_wording import HIDES_THE_LOG  # noqa: E402

config.substitutions.append(("%libnvvm_log", "hidden" if HIDES_THE_LOG else "passed-on"))
