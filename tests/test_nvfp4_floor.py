"""bench/nvfp4_floor.py's argument checks and its patch (the timing itself runs on a GPU only)."""

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "bench"))

import nvfp4_floor  # noqa: E402


def test_rounds_must_be_positive(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        nvfp4_floor.main(["--out", str(tmp_path), "--rounds", "0"])
    assert stop.value.code == 2 and "--rounds must be at least 1" in capsys.readouterr().err


def test_the_patch_is_undone():
    """The no-op lives only inside the context, and the real method is back after an error too."""
    from cute_lowering.kernels.fmha_sm90_epilogue import Sm90Epilogues

    real = Sm90Epilogues.quantize_own_rows
    with pytest.raises(RuntimeError):
        with nvfp4_floor.quantization_traced_out():
            assert Sm90Epilogues.quantize_own_rows is not real
            assert Sm90Epilogues.quantize_own_rows(None) is None
            raise RuntimeError("stop")
    assert Sm90Epilogues.quantize_own_rows is real
