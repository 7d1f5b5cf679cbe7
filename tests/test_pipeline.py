"""The pass framework through its Python API: parsing, options, statistics, failures."""

from __future__ import annotations

import pytest

from cute_lowering import LoweringError, Pipeline, SourceBuffer, run_pipeline
from cute_lowering.mlir import arith, ir, new_context, parse_module
from cute_lowering.opt import split_input
from cute_lowering.pipeline import parse_pipeline
from cute_lowering.registry import OptionError, flag, integer, register_pass
from cute_lowering.rewriting import RewritePass

IR = """
func.func @f(%x: f32, %v: vector<4xf32>) -> (i32, vector<4xi32>, i4) {
  %r = math.roundeven %x : f32
  %0 = arith.fptosi %r : f32 to i32
  %1 = arith.fptosi %v : vector<4xf32> to vector<4xi32>
  %2 = arith.fptosi %x : f32 to i4
  return %0, %1, %2 : i32, vector<4xi32>, i4
}
"""


def run(pipeline: str, text: str = IR):
    with new_context() as context:
        module = parse_module(text, context)
        result = run_pipeline(module, pipeline, SourceBuffer("input.mlir", text))
        return result, str(module)


def test_statistics_count_rewritten_left_and_folded():
    result, out = run("builtin.module(fptosi-to-ptx)")
    assert result.counts("fptosi-to-ptx") == {"rewritten": 2, "left": 1, "folded": 1}
    assert out.count("cvt.rzi.s32.f32") == 4 and out.count("cvt.rni.s32.f32") == 1
    assert "arith.fptosi %arg0 : f32 to i4" in out


def test_left_op_gets_a_located_remark():
    result, _ = run("fptosi-to-ptx")
    [remark] = result.diagnostics
    assert remark.severity == "remark"
    assert str(remark.location) == "input.mlir:6:8"
    assert "4-bit integer" in remark.message


def test_counts_add_up_over_repeated_passes():
    result, _ = run("builtin.module(fptosi-to-ptx,canonicalize,fptosi-to-ptx)")
    assert result.counts("fptosi-to-ptx") == {"rewritten": 2, "left": 2, "folded": 1}
    assert [p.name for p in result.passes] == ["fptosi-to-ptx", "fptosi-to-ptx"]


def test_pipeline_syntax():
    assert [e.name for e in parse_pipeline("builtin.module(a{x=1 y=\"b c\"}, func.func(cse), b)")] == [
        "a",
        "func.func",
        "b",
    ]
    assert [e.name for e in parse_pipeline(" a , b ")] == ["a", "b"]
    with pytest.raises(LoweringError) as error:
        parse_pipeline("builtin.module(a,,b)")
    assert str(error.value.diagnostics[0].location) == "<pass-pipeline>:1:18"


@pytest.mark.parametrize(
    "pipeline, message",
    [
        ("fptosi-to-ptx{emit=sass}", "invalid value 'sass' for option 'emit'"),
        ("fptosi-to-ptx{bogus=1}", "has no option 'bogus'"),
        ("no-such-pass", "'no-such-pass' does not refer to a registered pass"),
        ("fptosi-to-ptx(cse)", "is a pass, not an op to nest a pipeline in"),
        ("cse,builtin.module(cse)", "must be the whole pipeline"),
    ],
)
def test_bad_pipelines_are_located_errors(pipeline, message):
    with pytest.raises(LoweringError) as error:
        Pipeline(pipeline)
    diagnostic = error.value.diagnostics[0]
    assert message in diagnostic.message
    assert diagnostic.location.file == "<pass-pipeline>"


def test_typed_options():
    assert flag("f", False, "").parse("true") is True
    assert flag("f", True, "").parse("0") is False
    assert integer("n", 4, "").parse("0x10") == 16
    with pytest.raises(OptionError):
        integer("n", 4, "").parse("four")
    with pytest.raises(OptionError):
        flag("f", False, "").parse("maybe")


def test_split_input_keeps_file_lines():
    text = "a\n// -----\nb\nc\n// -----\nd\n"
    chunks = split_input(text, "x.mlir", True)
    assert [(c.text, c.first_line) for c in chunks] == [("a\n", 1), ("b\nc\n", 3), ("d\n", 6)]


# Passes that misbehave on purpose, to show failures are reported, not raised raw.
@register_pass("test-raises")
class _Raises(RewritePass):
    """Test only: raises from inside a pass."""

    roots = ("arith.fptosi",)

    def match(self, op):
        raise ZeroDivisionError("boom")


@register_pass("test-breaks-types")
class _BreaksTypes(RewritePass):
    """Test only: replaces an i32 result by an f32 constant the verifier must reject."""

    roots = ("arith.fptosi",)

    def match(self, op):
        return None

    def rewrite(self, op, _):
        op.results[0].replace_all_uses_with(arith.constant(ir.F32Type.get(), 1.0))
        return None


def test_exception_in_a_pass_becomes_a_pass_failure():
    with pytest.raises(LoweringError) as error:
        run("test-raises")
    [diagnostic] = error.value.diagnostics[:1]
    assert diagnostic.message == "internal error in pass 'test-raises': ZeroDivisionError: boom"
    assert str(diagnostic.location) == "input.mlir:4:8"


def test_verifier_runs_after_our_passes():
    with pytest.raises(LoweringError) as error:
        run("test-breaks-types")
    assert any("error" == d.severity for d in error.value.diagnostics)
    assert "input.mlir" in str(error.value)
