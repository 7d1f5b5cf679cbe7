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
