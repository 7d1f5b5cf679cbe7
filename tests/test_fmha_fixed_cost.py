"""bench/fmha_fixed_cost.py's arithmetic and argument checks (the GPU part runs on the H200 only)."""

from __future__ import annotations

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "bench"))

import fmha_fixed_cost  # noqa: E402


def test_line_fit_recovers_a_line_and_a_least_squares_one():
    intercept, slope = fmha_fixed_cost.line_fit([512, 1024, 2048, 4096], [12.0 + 0.01 * x for x in (512, 1024, 2048, 4096)])
    assert intercept == pytest.approx(12.0) and slope == pytest.approx(0.01)
    # (0, 1), (1, 1), (2, 4): mean x 1, mean y 2, slope (1*-1 + 0 + 1*2) / 2 = 1.5, intercept 0.5
    assert fmha_fixed_cost.line_fit([0, 1, 2], [1, 1, 4]) == (pytest.approx(0.5), pytest.approx(1.5))


def test_one_key_count_is_refused_before_any_gpu_work(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        fmha_fixed_cost.main(["--out", str(tmp_path), "--sk", "4096"])
    assert exit_info.value.code == 2 and "at least two key counts" in capsys.readouterr().err


@pytest.mark.parametrize("bad", [["--sk", "512,abc"], ["--sq", "0,128"], ["--sk", "1024,1024"]])
def test_bad_lengths_are_usage_errors(bad, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        fmha_fixed_cost.main(["--out", str(tmp_path), *bad])
    assert exit_info.value.code == 2 and "error:" in capsys.readouterr().err
