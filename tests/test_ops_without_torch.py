"""Without torch, `import cute_lowering.kernels.ops` names the extra that brings it (issue 38, item 8).

It said only `ModuleNotFoundError: No module named 'torch'`, with no word of the optional
`[torch]` extra. Torch is hidden from a fresh interpreter (a None entry in sys.modules
makes its import fail as if it were not installed), so this runs with or without torch.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

HIDE_TORCH = """
import sys
sys.modules["torch"] = None  # import torch -> ModuleNotFoundError, as where it is not installed
try:
    import cute_lowering.kernels.ops
except ModuleNotFoundError as e:
    assert e.name == "torch", e.name  # still the error callers catch for a missing module
    print(e)
else:
    raise SystemExit("cute_lowering.kernels.ops imported without torch")
"""


def test_import_without_torch_names_the_extra():
    env = dict(os.environ)
    proc = subprocess.run([sys.executable, "-c", HIDE_TORCH], capture_output=True, text=True, env=env, cwd=REPO,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "install the extra `torch`" in proc.stdout and "pip install -e '.[torch]'" in proc.stdout, proc.stdout
