"""The torch ops (kernels/ops.py): registration, fake impls, tracing; on a GPU opcheck, torch.compile, CUDA graphs.

Without a GPU: the ops exist under `torch.ops.cute_lowering`, their fake impls give the
shapes and dtypes the CUDA impls allocate and refuse what the CUDA impls refuse, and
`torch.compile(fullgraph=True)` traces the public functions into the ops (meta inputs:
the fake impls run, nothing launches). With a GPU: `torch.library.opcheck` of every op,
a decode step (NVFP4 quantize + attention) compiled with fullgraph and captured in a CUDA
graph gives bit-identical results to eager, and the global scale the quantize kernel
derives from the amax equals the torch formula bit for bit.
"""

import pytest

torch = pytest.importorskip("torch")

from cute_lowering.kernels import fmha, nvfp4, ops  # noqa: E402

OPS = ("nvfp4_quantize", "nvfp4_quantize_computing_scale", "nvfp4_dequantize", "nvfp4_global_scale", "attention", "attention_nvfp4")
BF = torch.bfloat16
DECODE = dict(q=(1, 1, 32, 128), kv=(1, 4096, 8, 128))  # the decode shape


def test_ops_are_registered():
    for name in OPS:
        packet = getattr(torch.ops.cute_lowering, name)
        assert packet.default._schema.name == f"cute_lowering::{name}"
    schema = str(torch.ops.cute_lowering.nvfp4_quantize.default._schema)
    assert "Tensor x, Tensor global_scale" in schema and "-> (Tensor, Tensor)" in schema


# --- fake impls: exact shapes and dtypes, the same refusals -------------------------------------
def _fake():
    from torch._subclasses.fake_tensor import FakeTensorMode

    return FakeTensorMode()


def test_fake_quantize_shapes():
    with _fake():
        x = torch.empty(16, 7168, dtype=BF, device="cuda")
        packed, scales = torch.ops.cute_lowering.nvfp4_quantize(x, torch.ones((), device="cuda"))
        assert (packed.shape, packed.dtype, packed.device.type) == ((16, 3584), torch.uint8, "cuda")
        assert (scales.shape, scales.dtype) == ((16, 448), torch.uint8)  # the E4M3 bits
        packed, scales, gs = torch.ops.cute_lowering.nvfp4_quantize_computing_scale(x)
        assert (packed.shape, scales.shape, gs.shape, gs.dtype) == ((16, 3584), (16, 448), (), torch.float32)
        y = torch.ops.cute_lowering.nvfp4_dequantize(packed, scales, gs, torch.float16)
        assert (y.shape, y.dtype) == ((16, 7168), torch.float16)
        g = torch.ops.cute_lowering.nvfp4_global_scale(x)
        assert (g.shape, g.dtype) == ((), torch.float32)


def test_fake_quantize_refuses_what_the_kernel_refuses():
    with _fake():
        one = torch.ones((), device="cuda")
        with pytest.raises(ValueError, match="multiple of 16"):
            torch.ops.cute_lowering.nvfp4_quantize(torch.empty(4, 24, dtype=BF, device="cuda"), one)
        with pytest.raises(TypeError, match="bfloat16, float16 or float32"):
            torch.ops.cute_lowering.nvfp4_quantize_computing_scale(torch.empty(4, 32, dtype=torch.int8, device="cuda"))
        with pytest.raises(ValueError, match="one element"):
            torch.ops.cute_lowering.nvfp4_quantize(torch.empty(4, 32, dtype=BF, device="cuda"), torch.ones(2, device="cuda"))
        with pytest.raises(ValueError, match="variant must be one of"):
            torch.ops.cute_lowering.nvfp4_quantize(torch.empty(4, 32, dtype=BF, device="cuda"), one, "exact")
        with pytest.raises(ValueError, match="shapes do not match"):
            packed = torch.empty(4, 16, dtype=torch.uint8, device="cuda")
            torch.ops.cute_lowering.nvfp4_dequantize(packed, torch.empty(4, 3, dtype=torch.uint8, device="cuda"), one, BF)


def test_fake_attention_shapes():
    with _fake():
        q = torch.empty(*DECODE["q"], dtype=BF, device="cuda")
        k = torch.empty(*DECODE["kv"], dtype=BF, device="cuda")
        out, lse = torch.ops.cute_lowering.attention(q, k, k, None, 0.088, -1, -1)
        assert (out.shape, out.dtype, lse.shape, lse.dtype) == ((1, 1, 32, 128), BF, (1, 32, 1), torch.float32)
        sink = torch.empty(32, device="cuda")
        codes, scales, lse = torch.ops.cute_lowering.attention_nvfp4(q, k, k, sink, torch.ones((), device="cuda"), 0.088, 128, 0)
        assert (codes.shape, codes.dtype) == ((1, 1, 32, 64), torch.uint8)
        assert (scales.shape, scales.dtype) == ((1, 1, 32, 8), torch.uint8)
        with pytest.raises(ValueError, match="multiple of k/v heads"):
            torch.ops.cute_lowering.attention(torch.empty(1, 1, 12, 128, dtype=BF, device="cuda"), k, k, None, 0.1, -1, -1)
        with pytest.raises(ValueError, match="sink must be float32 of shape"):
            torch.ops.cute_lowering.attention(q, k, k, torch.empty(8, device="cuda"), 0.1, -1, -1)
        with pytest.raises(ValueError, match="softmax_scale must be positive"):
            torch.ops.cute_lowering.attention(q, k, k, None, 0.0, -1, -1)


def test_opcheck_registration_without_a_gpu():
    """torch's own checks that need no kernel run (schema, autograd registration) on meta inputs."""
    x = torch.empty(16, 64, dtype=BF, device="meta")
    g = torch.empty((), device="meta")
    q, k = torch.empty(1, 1, 4, 64, dtype=BF, device="meta"), torch.empty(1, 32, 2, 64, dtype=BF, device="meta")
    cases = [
        (torch.ops.cute_lowering.nvfp4_quantize.default, (x, g)),
        (torch.ops.cute_lowering.nvfp4_quantize_computing_scale.default, (x,)),
        (torch.ops.cute_lowering.attention.default, (q, k, k, None, 0.125, -1, 0)),
    ]
    for op, args in cases:
        torch.library.opcheck(op, args, test_utils=("test_schema", "test_autograd_registration"))


# --- torch.compile traces the public functions into the ops --------------------------------------
def _decode_step(x, q, k, v, sink):
    packed, scales, gs = nvfp4.quantize(x)
    packed2, scales2, _ = nvfp4.quantize(x, gs)
    y = nvfp4.dequantize(packed, scales, gs)
    out, lse = fmha.attention(q, k, v, causal=True, sink=sink, return_lse=True)
    codes, oscales, ogs = fmha.attention(q, k, v, out_format="nvfp4")
    return packed, scales, gs, packed2, scales2, y, out, lse, codes, oscales, ogs


def test_compile_fullgraph_traces_the_ops():
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    x = torch.empty(16, 7168, dtype=BF, device="meta")
    q = torch.empty(*DECODE["q"], dtype=BF, device="meta")
    k = torch.empty(*DECODE["kv"], dtype=BF, device="meta")
    sink = torch.empty(32, device="meta")
    torch._dynamo.reset()
    results = torch.compile(_decode_step, backend=backend, fullgraph=True)(x, q, k, k, sink)
    assert len(graphs) == 1  # fullgraph: one graph, no break
    called = {str(n.target) for n in graphs[0].graph.nodes if n.op == "call_function"}
    for name in ("nvfp4_quantize_computing_scale", "nvfp4_quantize", "nvfp4_dequantize", "attention", "attention_nvfp4", "nvfp4_global_scale"):
        assert f"cute_lowering.{name}.default" in called, (name, called)
    shapes = [tuple(r.shape) for r in results]
    assert shapes == [(16, 3584), (16, 448), (), (16, 3584), (16, 448), (16, 7168), (1, 1, 32, 128), (1, 32, 1), (1, 1, 32, 64), (1, 1, 32, 8), ()]


def test_eager_refusals_are_the_users():
    with pytest.raises(ValueError, match="CUDA device"):
        nvfp4.quantize(torch.zeros(4, 32, dtype=BF))
    with pytest.raises(ValueError, match="CUDA device"):
        nvfp4.quantize(torch.zeros(4, 32, dtype=BF), torch.ones(()))
    with pytest.raises(TypeError, match="x must be a torch.Tensor"):
        nvfp4.quantize([1.0] * 16)
    with pytest.raises(ValueError, match="must be on a CUDA device"):
        fmha.attention(torch.zeros(1, 1, 4, 64, dtype=BF), torch.zeros(1, 8, 2, 64, dtype=BF), torch.zeros(1, 8, 2, 64, dtype=BF))


def test_op_refusals_on_cpu_tensors_are_the_users():
    """Through the dispatcher a CPU tensor reaches the ops' kernel (registered for every
    backend) and gets its message, not torch's "Could not run ... with arguments from the
    'CPU' backend" (what a CUDA-only registration would answer)."""
    with pytest.raises(ValueError, match="x must be on a CUDA device"):
        torch.ops.cute_lowering.nvfp4_quantize_computing_scale(torch.zeros(4, 32, dtype=BF))
    with pytest.raises(ValueError, match="x must be on a CUDA device"):
        torch.ops.cute_lowering.nvfp4_quantize(torch.zeros(4, 32, dtype=BF), torch.ones(()))
    with pytest.raises(ValueError, match="packed must be on a CUDA device"):
        torch.ops.cute_lowering.nvfp4_dequantize(torch.zeros(4, 16, dtype=torch.uint8), torch.zeros(4, 2, dtype=torch.uint8), torch.ones(()), BF)
    kv = torch.zeros(1, 8, 2, 64, dtype=BF)
    with pytest.raises(ValueError, match="must be on a CUDA device"):
        torch.ops.cute_lowering.attention(torch.zeros(1, 1, 4, 64, dtype=BF), kv, kv, None, 0.125, -1, -1)


# --- on the GPU ---------------------------------------------------------------------------------
def _cuda():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")


def _decode_inputs(seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(16, 7168, generator=g, device="cuda").to(BF)
    q = torch.randn(*DECODE["q"], generator=g, device="cuda").to(BF)
    k = torch.randn(*DECODE["kv"], generator=g, device="cuda").to(BF)
    v = torch.randn(*DECODE["kv"], generator=g, device="cuda").to(BF)
    sink = torch.randn(32, generator=g, device="cuda")
    return x, q, k, v, sink


def _same(a, b):
    """Bitwise equality of two results (tuples of tensors): dtype, shape and every byte."""
    assert len(a) == len(b)
    for i, (s, t) in enumerate(zip(a, b)):
        assert (s.dtype, s.shape) == (t.dtype, t.shape), i
        assert torch.equal(s.reshape(-1).view(torch.uint8), t.reshape(-1).view(torch.uint8)), i


@pytest.mark.gpu
def test_gpu_opcheck():
    _cuda()
    x, q, k, v, sink = _decode_inputs()
    gs = nvfp4.compute_global_scale(x)
    packed, scales, _ = nvfp4.quantize(x, gs)
    cases = [
        (torch.ops.cute_lowering.nvfp4_quantize.default, (x, gs)),
        (torch.ops.cute_lowering.nvfp4_quantize_computing_scale.default, (x,)),
        (torch.ops.cute_lowering.nvfp4_dequantize.default, (packed, scales.view(torch.uint8), gs, BF)),
        (torch.ops.cute_lowering.nvfp4_global_scale.default, (x,)),
        (torch.ops.cute_lowering.attention.default, (q, k, v, sink, 0.088, -1, 0)),
        (torch.ops.cute_lowering.attention_nvfp4.default, (q, k, v, None, nvfp4.compute_global_scale(v), 0.088, -1, -1)),
    ]
    for op, args in cases:
        torch.library.opcheck(op, args)


@pytest.mark.gpu
def test_gpu_computed_scale_is_the_torch_formula():
    _cuda()
    for seed in range(3):
        x = _decode_inputs(seed)[0] * (10.0**seed)
        packed, scales, gs = nvfp4.quantize(x)
        a = x.float().abs()
        amax = torch.where(torch.isfinite(a), a, torch.zeros_like(a)).amax()
        want = torch.where(amax > 0, torch.full_like(amax, 2688.0) / amax, torch.ones_like(amax))
        assert gs.shape == () and torch.equal(gs, want)
        _same(nvfp4.quantize(x, want)[:2], (packed, scales))
    zero = torch.zeros(16, 64, dtype=BF, device="cuda")
    assert nvfp4.quantize(zero)[2].item() == 1.0


@pytest.mark.gpu
def test_gpu_compile_fullgraph_matches_eager():
    _cuda()
    inputs = _decode_inputs()
    eager = _decode_step(*inputs)
    torch._dynamo.reset()
    compiled = torch.compile(_decode_step, fullgraph=True)(*inputs)
    _same(compiled, eager)


@pytest.mark.gpu
def test_gpu_cuda_graph_replays_bit_identically():
    _cuda()
    inputs = _decode_inputs()
    static = [t.clone() for t in inputs]
    eager = _decode_step(*inputs)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        _decode_step(*static)  # warm-up (compiles and loads outside the capture)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = _decode_step(*static)
    for _ in range(2):
        graph.replay()
        torch.cuda.synchronize()
        _same(captured, eager)
    # new inputs copied in: the replay follows them
    fresh = _decode_inputs(seed=7)
    for s, t in zip(static, fresh):
        s.copy_(t)
    graph.replay()
    torch.cuda.synchronize()
    _same(captured, _decode_step(*fresh))


@pytest.mark.gpu
def test_gpu_runs_on_the_current_stream():
    _cuda()
    x = _decode_inputs()[0]
    want = nvfp4.quantize(x)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        got = nvfp4.quantize(x)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    _same(got, want)
