"""The post stage inside real `cute.compile` calls (no GPU: compiles for sm_90a only).

lowering/post_stage.py cuts CuTeDSL's pipeline at `cute-to-nvvm{llvm-only=true}` for a module
the hook stamped; these tests check the cut itself (the expansion as measured per release),
that the cut alone changes nothing (byte-identical PTX and cubin, here on small kernels and,
through tests/post_stage_worker.py, on our FMHA, quack's, CUTLASS's Hopper and FlashAttention-4's
sm_90 kernels), that
post passes run and reach the binary, that CuTeDSL's cache never hands one build's binary to the
other, and that every misuse is a located error, never a traceback.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import subprocess
import sys

import cutlass.cute as cute
import pytest

import cute_lowering
import post_test_passes  # noqa: F401  (registers test-post-membar, test-post-fail)
from cute_kernels import CASES
from cute_lowering import post_stage
from cute_lowering.cutedsl import pipeline_string
from cute_lowering.diagnostics import LoweringError
from cute_lowering.stages import split_stages
from cute_lowering.targets import cutedsl_release

TESTS = os.path.dirname(os.path.abspath(__file__))
ARCH = "sm_90a"
MEMBAR = "test-post-membar"

# cute-to-nvvm's expansion as measured (`str(PassManager.parse(...))`): (full, llvm-only=true)
MEASURED_EXPANSION = {"4.6.2": (43, 39), "4.8.1": (45, 41)}
REST = ["cuda-to-binary", "cuda-to-llvm", "reconcile-unrealized-casts", "cuda-error-handling"]


@pytest.fixture(autouse=True)
def no_process_wide_hook():
    cute_lowering.uninstall()
    yield
    cute_lowering.uninstall()


def build(name: str, tmp_path, tag: str) -> tuple[bytes, str]:
    """(cubin, PTX) of a tests/cute_kernels.py case compiled for sm_90a."""
    launcher, arguments = CASES[name]
    folder = tmp_path / tag
    folder.mkdir()
    compiled = cute.compile(launcher, *arguments(), options=f"--gpu-arch {ARCH} --keep-cubin --keep-ptx --dump-dir {folder}")
    return bytes(compiled.__cubin__), compiled.__ptx__


# --- the cut --------------------------------------------------------------------------
def test_the_cut_is_the_measured_one():
    from cute_lowering.pipeline import parse_pipeline

    pipeline = pipeline_string(ARCH)
    cut = post_stage.split(pipeline)
    assert "llvm-only=true" in cut.head and cut.head.startswith("builtin.module(cute-to-nvvm{")
    assert [e.name for e in parse_pipeline(cut.rest)] == REST
    assert f"opt-level=3" in cut.rest  # the compile's own options travel with the rest
    release = cutedsl_release()
    if release in MEASURED_EXPANSION:
        full, head = MEASURED_EXPANSION[release]
        assert len(post_stage._expanded(pipeline)) == full
        assert len(post_stage._expanded(cut.head)) == head


def test_the_cut_keeps_options_with_spaces():
    pipeline = pipeline_string(ARCH).replace("rdc=false", "rdc=false ptx-options='-v --maxrregcount=128'")
    assert "ptx-options={-v --maxrregcount=128}" in post_stage._normal(post_stage.split(pipeline).rest)


@pytest.mark.parametrize(
    "pipeline, why",
    [
        ("builtin.module(canonicalize)", "does not end in cute-to-nvvm"),
        ("builtin.module(cute-to-nvvm{llvm-only=true})", "already sets llvm-only"),
        ("builtin.module(cute-to-nvvm{no-such-option=1})", "does not parse"),
    ],
)
def test_a_pipeline_that_cannot_be_cut_is_refused_by_name(pipeline, why):
    with pytest.raises(post_stage.PostStageUnsupported, match=why) as e:
        post_stage.split(pipeline)
    assert f"CuTeDSL {cutedsl_release()}" in str(e.value)


def test_a_release_that_cannot_be_cut_refuses_post_passes_at_install(monkeypatch):
    def refuse(_pipeline):
        raise post_stage.PostStageUnsupported("post-stage passes are not supported with CuTeDSL 9.9: measured")

    monkeypatch.setattr(post_stage, "split", refuse)
    with pytest.raises(LoweringError, match="not supported with CuTeDSL 9.9"):
        cute_lowering.install(f"builtin.module(auto,{MEMBAR})")
    with pytest.raises(LoweringError, match="not supported with CuTeDSL 9.9"):
        cute_lowering.prelowering(post=f"builtin.module({MEMBAR})")
    cute_lowering.install("auto")  # pre passes alone never need the cut


# --- stages in a pipeline ---------------------------------------------------------------
def test_stages_split_one_pipeline():
    staged = split_stages(f"builtin.module(fptosi-to-ptx,canonicalize,{MEMBAR},cse)")
    assert staged.pre == "builtin.module(fptosi-to-ptx,canonicalize)"
    assert staged.post == f"builtin.module({MEMBAR},cse)"
    assert split_stages("builtin.module(fptosi-to-ptx)").post is None
    assert split_stages(f"builtin.module({MEMBAR})").pre is None
    assert split_stages("builtin.module()").pre == "builtin.module()"


def test_a_pre_pass_after_a_post_pass_is_a_located_error():
    text = f"builtin.module({MEMBAR},fptosi-to-ptx)"
    with pytest.raises(LoweringError) as e:
        cute_lowering.install(text)
    (diagnostic,) = e.value.diagnostics
    assert diagnostic.location.col == text.index("fptosi-to-ptx") + 1
    assert "cannot follow 'test-post-membar' (stage post)" in diagnostic.message


def test_posts_are_appended_once_and_mlir_passes_kept():
    from cute_lowering.hook import with_posts

    text = with_posts(
        f"builtin.module(fptosi-to-ptx,canonicalize,{MEMBAR})", (f"builtin.module({MEMBAR},canonicalize)", "builtin.module(wgmma-report)")
    )
    assert text == f"builtin.module(fptosi-to-ptx,canonicalize,{MEMBAR},canonicalize,wgmma-report)"
    assert split_stages(text).post == f"builtin.module({MEMBAR},canonicalize,wgmma-report)"


def test_post_takes_post_passes_only():
    with pytest.raises(LoweringError, match="not a post-stage pass"):
        cute_lowering.prelowering(post="builtin.module(fptosi-to-ptx)")


# --- inside cute.compile ----------------------------------------------------------------
def test_the_cut_alone_changes_nothing(tmp_path, monkeypatch):
    plain = build("exp2_on_fma", tmp_path, "plain")
    monkeypatch.setenv("CUTE_LOWERING_DUMP", str(tmp_path / "dump"))
    with cute_lowering.prelowering("builtin.module()"):
        split = build("exp2_on_fma", tmp_path, "split")
    assert split == plain
    (dumped,) = glob.glob(str(tmp_path / "dump" / "*.sm_90a.post.mlir"))
    text = open(dumped, encoding="utf-8").read()
    assert "gpu.module @kernels" in text and "llvm.func @kernel_" in text and "cute_lowering." not in text
    # it is what lowering-opt reads
    run = subprocess.run([sys.executable, "-m", "cute_lowering.opt", dumped, "-p", f"builtin.module()"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_a_post_dump_compiles_back_to_the_same_binary(tmp_path, monkeypatch):
    # the dump is the whole truth of the lowered module: the rest of the pipeline on it alone
    # gives cute.compile's own binary (cute_lowering.cutedsl.compile_post_ir, as tools would use it)
    from cute_lowering.cutedsl import compile_post_ir

    monkeypatch.setenv("CUTE_LOWERING_DUMP", str(tmp_path / "dump"))
    with cute_lowering.prelowering("builtin.module()"):
        cubin, ptx = build("floor_to_int32", tmp_path, "dumped")
    (dumped,) = glob.glob(str(tmp_path / "dump" / "*.sm_90a.post.mlir"))
    assert compile_post_ir(open(dumped, encoding="utf-8").read(), ARCH) == (ptx, cubin)


def test_a_post_pass_reaches_the_binary_and_a_plain_build_never_gets_it(tmp_path):
    plain_cubin, plain_ptx = build("inline_asm_cvt", tmp_path, "plain")
    for round_ in range(2):  # either cache serving the other build would show here
        with cute_lowering.prelowering(f"builtin.module(auto,{MEMBAR})"):
            cubin, ptx = build("inline_asm_cvt", tmp_path, f"post{round_}")
        assert "membar.cta;" in ptx and cubin != plain_cubin
        report = cute_lowering.last_report()
        assert [(p.name, p.stage) for p in report.passes][-1] == (MEMBAR, "post")
        assert report.passes[-1].counts == {"rewritten": 1}
        assert report.post_pipeline == f"builtin.module({MEMBAR})" and report.post_ran
        assert f"{MEMBAR} [post]: rewritten=1" in report.summary()
        again = build("inline_asm_cvt", tmp_path, f"plain{round_}")
        assert again == (plain_cubin, plain_ptx)


def test_post_composes_with_an_inner_pipeline(tmp_path):
    # like kernels/fmha.py: the library sets its own pipeline, the caller adds post passes
    with cute_lowering.prelowering(post=f"builtin.module({MEMBAR})"):
        with cute_lowering.prelowering("builtin.module(fptosi-to-ptx)"):
            _, ptx = build("floor_to_int32", tmp_path, "inner")
    assert "membar.cta;" in ptx and "cvt.rmi.s32.f32" in ptx
    assert [p.name for p in cute_lowering.last_report().passes] == ["fptosi-to-ptx", MEMBAR]


def test_tvm_ffi_builds_keep_their_finishing_hook(tmp_path):
    if importlib_find("tvm_ffi") is None:
        pytest.skip("apache-tvm-ffi is not installed (the torch extra has it)")
    launcher, arguments = CASES["to_int32"]
    with cute_lowering.prelowering(post=f"builtin.module({MEMBAR})"):
        compiled = cute.compile(
            launcher, *arguments(), options=f"--gpu-arch {ARCH} --enable-tvm-ffi --keep-ptx --dump-dir {tmp_path}"
        )
    assert "membar.cta;" in compiled.__ptx__
    assert type(compiled).__name__.startswith("TVMFFI")  # TVM-FFI's post-compile hook built it


def test_a_failing_post_pass_is_reported_as_ours(tmp_path):
    with pytest.raises(cute_lowering.PreloweringError) as e:
        with cute_lowering.prelowering(post="builtin.module(test-post-fail)"):
            build("to_int32", tmp_path, "fail")
    text = str(e.value)
    assert "post-stage pipeline builtin.module(test-post-fail) failed" in text
    assert "internal error in pass 'test-post-fail': RuntimeError: this pass always fails" in text


# --- other people's kernels: the cut alone, byte for byte -------------------------------
@pytest.mark.parametrize(
    "specs",
    [
        ("ours:fmha128",),
        pytest.param(("quack:gemm_bf16", "quack:softmax_fwd"), id="quack"),
        pytest.param(("cutlass:cutlass_hopper_dense_gemm",), id="cutlass"),
        pytest.param(("fa4:fa4_fwd_d128", "fa4:fa4_fwd_d128_causal", "fa4:fa4_fwd_d64"), id="fa4"),
    ],
)
def test_other_kernels_are_byte_identical_through_the_cut(specs, tmp_path):
    if specs[0].startswith("quack") and (
        importlib_find("quack") is None or importlib_find("torch") is None or importlib_find("tvm_ffi") is None
    ):
        pytest.skip("quack-kernels, torch or tvm_ffi not installed (pip install -e '.[peers]')")
    if specs[0].startswith("fa4") and (importlib_find("flash_attn") is None or importlib_find("torch") is None):
        pytest.skip("flash-attn-4 not importable (pip install --target DIR --no-deps flash-attn-4==4.0.0b36; DIR on PYTHONPATH)")
    if specs[0].startswith("cutlass") and not os.environ.get("CUTLASS_EXAMPLES_DIR"):
        pytest.skip("CUTLASS_EXAMPLES_DIR (NVIDIA/cutlass examples/python/CuTeDSL) not set")
    env = dict(os.environ, POST_PIPELINE=f"builtin.module(wgmma-desc-hoist,{MEMBAR})")
    env.pop("CUTE_LOWERING_PIPELINE", None)
    run = subprocess.run(
        [sys.executable, os.path.join(TESTS, "post_stage_worker.py"), str(tmp_path), *specs],
        env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    results = json.loads((tmp_path / "results.json").read_text())
    for spec in specs:
        record = results[spec]
        for variant in ("plain", "split"):
            assert record[variant]["ok"], record[variant]["error"]
        assert record["split"]["cubin"] == record["plain"]["cubin"], spec
        assert record["split"]["ptx"] == record["plain"]["ptx"], spec
        assert any(name.endswith(".post.mlir") for name in record["split"]["post_dumps"]), spec
        assert record["post"]["ok"], record["post"]["error"]
        assert record["post"]["cubin"] != record["plain"]["cubin"], spec  # the post pass reached it


def importlib_find(name: str):
    import importlib.util

    return importlib.util.find_spec(name)


# --- CuTeDSL's file cache: a direct @cute.jit call served from it runs no post stage
_FILE_CACHE_CALL = """
import json, sys
sys.path.insert(0, sys.argv[1])
import torch
import cute_lowering, post_test_passes
from cutlass.cute.runtime import from_dlpack
from cute_kernels import N, _exp2_on_fma, _launcher
src = torch.linspace(-20.0, 20.0, N)
with cute_lowering.recorded_reports() as got, cute_lowering.prelowering(post="builtin.module(test-post-membar)"):
    try:
        _launcher(_exp2_on_fma)(from_dlpack(src), from_dlpack(torch.empty_like(src)))
    except Exception:
        pass  # (no GPU here: the launch fails after the compile, which is what is looked at)
print(json.dumps([[r.post_ran, [p.name for p in r.passes if p.stage == "post"]] for r in got]))
"""


def test_a_build_from_cutedsls_file_cache_says_its_post_stage_did_not_run(tmp_path):
    """Two processes, one CUTE_DSL_CACHE_DIR: the first compiles (post_ran, the post pass listed);
    the second traces (a report) and loads the binary from the file cache, so no compile runs:
    post_ran False, no post pass. The cache key holds the post pipeline (the stamp), so what it
    loads is the build with that pipeline (test_direct_jit_calls_... checks that on the GPU)."""
    env = {**os.environ, "CUTE_DSL_CACHE_DIR": str(tmp_path / "cache"), "CUTE_DSL_ARCH": ARCH}
    seen = []
    for _ in range(2):
        run = subprocess.run([sys.executable, "-c", _FILE_CACHE_CALL, TESTS], env=env, capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stderr[-3000:]
        seen.append(json.loads(run.stdout.strip().splitlines()[-1]))
    assert seen == [[[True, [MEMBAR]]], [[False, []]]]


# --- direct @cute.jit calls on the GPU: the post stage runs, and the caches keep builds apart
@pytest.mark.gpu
def test_direct_jit_calls_run_the_post_stage_and_never_share_a_binary(monkeypatch, tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    from cutlass.cute.runtime import from_dlpack
    from cute_kernels import N, _exp2_on_fma, _launcher

    # CuTeDSL's file cache outlives the process (read at each compile): with the default one a
    # second run of this test loads both builds from it and compiles nothing (seen on the H200,
    # 2026-12-06: [[]] where [[MEMBAR]] was asserted)
    monkeypatch.setenv("CUTE_DSL_CACHE_DIR", str(tmp_path / "cutedsl_cache"))
    cute_lowering.install("builtin.module()")  # every trace leaves a report, a cache hit's too
    launch = _launcher(_exp2_on_fma)  # a launcher of its own: nothing cached from other tests
    src = torch.linspace(-20.0, 20.0, N, device="cuda", dtype=torch.float32)
    # CuTeDSL's builds, counted at its compiler (the post stage's wrapper looks the class's compile
    # up at each call): one compile with cute-to-nvvm per build, none when a cache serves the call.
    # Reports cannot say it: each trace leaves one, and post_ran tells only of a post build.
    from cute_lowering.cutedsl import dsl_singletons

    builds = []
    # the class whose own compile each DSL's compiler runs (patched once, even where they share it)
    owners = {next(c for c in type(dsl.compiler_provider).__mro__ if "compile" in vars(c)) for dsl in dsl_singletons()}
    for compiler_class in owners:

        def counted(self, module, pipeline, *args, _compile=compiler_class.compile, **kwargs):
            if "cute-to-nvvm" in pipeline:
                builds.append(pipeline)
            return _compile(self, module, pipeline, *args, **kwargs)

        monkeypatch.setattr(compiler_class, "compile", counted)

    def call(post: str | None) -> tuple[torch.Tensor, int, list[tuple[list[str], bool]]]:
        """The output, the builds this call caused, and per report its post passes and post_ran."""
        dst = torch.empty_like(src)
        before = len(builds)
        # (not a count of reports() before and after: in a GPU suite part that compiled 256
        # kernels already the kept list no longer grows)
        with cute_lowering.recorded_reports() as got:
            with cute_lowering.prelowering(post=post) if post else contextlib.nullcontext():
                launch(from_dlpack(src), from_dlpack(dst))
            torch.cuda.synchronize()
        return dst, len(builds) - before, [([p.name for p in r.passes if p.stage == "post"], r.post_ran) for r in got]

    post = f"builtin.module({MEMBAR})"
    rewritten, built, reports = call(post)
    assert built == 1 and reports == [([MEMBAR], True)]
    plain, built, reports = call(None)  # built again, without it: not handed the rewritten binary
    assert built == 1 and reports == [([], False)]
    assert torch.equal(rewritten, plain)
    for variant in (post, None):  # each served from its own cache entry now: its trace's report, no build
        out, built, reports = call(variant)
        assert built == 0 and reports == [([], False)] and torch.equal(out, plain)
