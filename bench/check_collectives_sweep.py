"""check-collectives over every kernel we can compile: false positives, collectives seen, cost.

    python bench/check_collectives_sweep.py [--families ours,quack,fa4,cutlass] [--json OUT]

Each family compiles in its own process (CuTeDSL reads CUTE_DSL_ARCH/LINEINFO/KEEP when
imported; quack and FlashAttention-4 patch CuTe process-wide), with line info on (the
locations the check reports) and `CUTE_DSL_KEEP=ptx` (which also turns CuTeDSL's caches
off, so each compile is a real one). A trace-finalize hook runs `check_collectives` on
every traced module, inside the compile, where `prelowering(check="collectives")` runs
it, and records: the collectives it sees (ops `collective_ops.collective_of`
matches, by name), errors and warnings (with their text), the analysis' time, and the
compile's wall time (analysis excluded). A compile that fails is recorded, not hidden.

Families (no GPU needed; every one compiles for its own target):
- ours: NVFP4 quantize/amax/dequantize (kernels/nvfp4.py) and the FMHA forward
  (kernels/fmha.py: mma_sync and wgmma paths, features) for sm_90a and sm_100a;
- quack: quack-kernels 0.6.5 (tests/quack_kernels.py), sm_90a and sm_100a;
- fa4: FlashAttention-4 4.0.0b36's forward (`flash_attn.cute.flash_attn_func` under
  torch's FakeTensorMode, FLASH_ATTENTION_ARCH picking the sm_100 or sm_90 kernel; its
  schedulers ask the GPU for the SM count: FLASH_ATTENTION_NUM_SMS stands in); needs
  `--fa4 DIR` (pip install --target DIR --no-deps flash-attn-4==4.0.0b36);
- cutlass: CUTLASS's CuTeDSL examples (`--cutlass DIR`: a checkout of NVIDIA/cutlass,
  read as files; see CUTLASS_EXAMPLES for what is compiled and how).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TESTS = os.path.join(ROOT, "tests")


# --- inside a worker: the hook that keeps every traced module, the check over each ------------
class Recorder:
    """A trace-finalize hook: check_collectives on the live module, inside the compile,
    where `prelowering(check="collectives")` runs it (`in_hook`); or, with `--parsed`,
    the module's text kept (generic form, locations) and checked after the compile in a
    context of its own, as `lowering-opt` would check a dump."""

    def __init__(self, in_hook: bool = False):
        self.texts: list[tuple[str, str, float]] = []
        self.in_hook = in_hook
        self.hooked: list[dict] = []

    def __call__(self, _owner, module, function_name: str) -> None:
        start = time.perf_counter()
        if self.in_hook:
            self.hooked.append(check(module, function_name))
            return
        text = module.operation.get_asm(enable_debug_info=True, print_generic_op_form=True)
        self.texts.append((function_name, text, time.perf_counter() - start))


def check(module, function_name: str) -> dict:
    """check_collectives on one module: time, collectives seen, errors and warnings."""
    from cute_lowering.analysis.collective_ops import collective_of
    from cute_lowering.passes.check_collectives import check_collectives

    start = time.perf_counter()
    diagnostics = check_collectives(module)
    seconds = time.perf_counter() - start
    seen: Counter = Counter()

    def walk(op):
        for region in op.regions:
            for block in region:
                for inner in block:
                    found = collective_of(inner.operation)
                    if found is not None:
                        seen[found.op + (f"[{found.atom}]" if found.atom else "")] += 1
                    walk(inner.operation)

    from cute_lowering.mlir import inert_values

    with inert_values():  # reading operands must not build CuTeDSL wrappers (they create ops)
        walk(module.operation)
    return {
        "function": function_name, "analysis_s": seconds, "collectives": dict(seen),
        "errors": [d.format() for d in diagnostics if d.severity == "error"],
        "warnings": [d.format() for d in diagnostics if d.severity == "warning"],
    }  # fmt: skip


def check_text(function_name: str, text: str) -> dict:
    from cute_lowering.mlir import new_context, parse_module

    with new_context() as context:
        return check(parse_module(text, context), function_name)


def run_builders(builders: list[tuple[str, object]], arch: str, in_hook: bool = False) -> list[dict]:
    from cute_lowering.cutedsl import dsl_singletons
    from cute_lowering.mlir import warm_value_casters

    # what `cute_lowering.prelowering` does before any compile: the one-time probe of CuTeDSL's
    # value casters is not charged to the first kernel's analysis
    warm_value_casters()
    recorder = Recorder(in_hook)
    for dsl in dsl_singletons():
        dsl.register_trace_finalize_hook(recorder)
    results = []
    for name, build in builders:
        recorder.texts.clear()
        recorder.hooked.clear()
        start = time.perf_counter()
        error = None
        try:
            build()
        except Exception as e:  # recorded: a compile that fails is part of the result
            error = f"{type(e).__name__}: {str(e)[-1500:]}"
        total = time.perf_counter() - start
        printing = sum(seconds for _, _, seconds in recorder.texts)
        traced = list(recorder.hooked) + [check_text(fn, text) for fn, text, _ in recorder.texts]
        keep = os.environ.get("SWEEP_KEEP_IR")
        if keep:  # the modules as checked, for `--recheck` (the check again without compiling)
            os.makedirs(keep, exist_ok=True)
            for i, (fn, text, _) in enumerate(recorder.texts):
                with open(os.path.join(keep, f"{arch}__{name}__{i}.mlir"), "w", encoding="utf-8") as f:
                    f.write(text)
        analysis = sum(r["analysis_s"] for r in traced)
        compile_s = total - printing - (analysis if in_hook else 0.0)
        results.append({
            "kernel": name, "arch": arch, "compile_s": compile_s, "analysis_s": analysis,
            "compile_error": error, "traces": traced,
        })  # fmt: skip
        state = "COMPILE FAILED" if error else "ok"
        errors = sum(len(r["errors"]) for r in traced)
        warnings = sum(len(r["warnings"]) for r in traced)
        print(f"{arch} {name}: {state}, {len(traced)} traced, {errors} errors, {warnings} warnings, "
              f"{analysis * 1e3:.1f} ms analysis / {compile_s:.2f} s compile", flush=True)  # fmt: skip
    return results


# --- the families ---------------------------------------------------------------------------
def ours(arch: str) -> list:
    from cute_lowering.kernels import fmha, nvfp4

    builders = []
    for dtype in ("bfloat16", "float16", "float32"):
        builders.append((f"nvfp4_quantize_{dtype}", lambda d=dtype: nvfp4.compile_quantize.__wrapped__(d, arch)))
    builders += [
        ("nvfp4_quantize_fptosi", lambda: nvfp4.compile_quantize.__wrapped__("bfloat16", arch, "fptosi")),
        ("nvfp4_quantize_scale_from_amax", lambda: nvfp4.compile_quantize.__wrapped__("bfloat16", arch, scale="partials")),
        ("nvfp4_quantize_scale_cluster", lambda: nvfp4.compile_quantize.__wrapped__("bfloat16", arch, scale="cluster")),
        ("nvfp4_amax", lambda: nvfp4.compile_amax.__wrapped__("bfloat16", arch)),
        ("nvfp4_dequantize_bf16", lambda: nvfp4.compile_dequantize.__wrapped__("bfloat16", arch)),
        ("nvfp4_dequantize_f32", lambda: nvfp4.compile_dequantize.__wrapped__("float32", arch)),
    ]  # fmt: skip
    compile_attention = getattr(fmha.compile_attention, "__wrapped__", fmha.compile_attention)
    paths = ("mma_sync", "wgmma") if arch == "sm_90a" else ("mma_sync",)
    features = [
        dict(dtype="bfloat16", head_dim=128),
        dict(dtype="float16", head_dim=64),
        dict(dtype="bfloat16", head_dim=128, causal=True),
        dict(dtype="bfloat16", head_dim=64, causal=True),
        dict(dtype="bfloat16", head_dim=64, window=(64, 0)),
        dict(dtype="bfloat16", head_dim=128, sink=True, causal=True),
        dict(dtype="bfloat16", head_dim=128, out_format="nvfp4"),
    ]
    for path in paths:
        for f in features:
            label = "_".join(f"{k}{'' if v is True else v}" for k, v in f.items() if k not in ("dtype",)).replace(" ", "")
            name = f"fmha_{path}_{f['dtype']}_{label}".replace("(", "").replace(")", "").replace(",", "x")
            builders.append((name, lambda p=path, f=f: compile_attention(arch=arch, path=p, **f)))
    # the decode path (kernels/fmha_decode.py): the <= 16-row kernel with its last-CTA combine
    # (key_warps) and the 64-row kernel + combine kernel; (has_left, has_right, has_sink)
    from cute_lowering.kernels import fmha_decode

    compile_decode = getattr(fmha_decode.compile_decode, "__wrapped__", fmha_decode.compile_decode)
    for key_warps in (True, False):
        for head_dim, masks in ((128, (False, False, False)), (128, (False, True, True)), (64, (True, True, False))):
            name = f"fmha_decode_{'16rows' if key_warps else '64rows'}_d{head_dim}_" + "".join("lrs"[i] if m else "-" for i, m in enumerate(masks))
            builders.append((name, lambda d=head_dim, m=masks, kw=key_warps: compile_decode("bfloat16", d, *m, arch, key_warps=kw)))
    # the decode_wgmma path (fmha_sm90's packed split-KV kernel + fmha_decode's combine), sm_90a
    if arch == "sm_90a":
        for head_dim, group, feature in ((128, 8, {}), (64, 4, dict(causal=True, sink=True)), (128, 2, dict(window=(300, 0)))):
            label = "".join(k[0] for k in feature) or "plain"
            name = f"fmha_decode_wgmma_d{head_dim}_g{group}_{label}"
            builders.append((name, lambda d=head_dim, g=group, f=feature: compile_attention("bfloat16", d, arch=arch, path="decode_wgmma", group=g, **f)))
    return builders


def quack(arch: str) -> list:
    sys.path.insert(0, TESTS)
    os.environ["QUACK_CACHE_ENABLED"] = "0"
    import quack_kernels

    quack_kernels.import_quack()
    table = quack_kernels.builders()
    return [(f"quack_{name}", lambda n=name: table[n](arch)) for name in quack_kernels.KERNELS]


class _NoGpuHardwareInfo:
    """What FA4's schedulers ask `cutlass.utils.HardwareInfo` for, from FLASH_ATTENTION_NUM_SMS."""

    def __init__(self, *args, **kwargs):
        self.sms = int(os.environ["FLASH_ATTENTION_NUM_SMS"])

    def get_device_multiprocessor_count(self):
        return self.sms

    def get_max_active_clusters(self, cluster_size=1):
        return self.sms // cluster_size

    def get_l2_cache_size_in_bytes(self):
        return 50 * 2**20


def fa4(arch: str) -> list:
    sys.path.insert(0, TESTS)
    import quack_kernels

    quack_kernels.import_quack()  # flash_attn.cute imports quack; quack/__init__ needs triton
    import cutlass.utils
    import cutlass.utils.hardware_info as hardware_info

    cutlass.utils.HardwareInfo = hardware_info.HardwareInfo = _NoGpuHardwareInfo
    import flash_attn.cute.tile_scheduler as tile_scheduler
    import torch
    from flash_attn.cute.interface import flash_attn_func, flash_attn_varlen_func
    from torch._subclasses.fake_tensor import FakeTensorMode

    tile_scheduler.HardwareInfo = _NoGpuHardwareInfo

    def forward(head_dim=128, causal=False, window=(None, None), heads_kv=4, sink=False, dtype=torch.bfloat16):
        with FakeTensorMode():
            q = torch.empty(2, 512, 8, head_dim, dtype=dtype, device="cuda")
            k = torch.empty(2, 512, heads_kv, head_dim, dtype=dtype, device="cuda")
            v = torch.empty(2, 512, heads_kv, head_dim, dtype=dtype, device="cuda")
            learnable_sink = torch.empty(8, dtype=torch.bfloat16, device="cuda") if sink else None
            flash_attn_func(q, k, v, causal=causal, window_size=window, learnable_sink=learnable_sink)

    def varlen(head_dim=128, causal=False, dtype=torch.bfloat16):
        # packed sequences (cu_seqlens): the tile scheduler sets the tile's bounds under
        # `if is_valid:` and uses them only under the same test (issue 37)
        with FakeTensorMode():
            q = torch.empty(1024, 8, head_dim, dtype=dtype, device="cuda")
            k = torch.empty(1024, 4, head_dim, dtype=dtype, device="cuda")
            v = torch.empty(1024, 4, head_dim, dtype=dtype, device="cuda")
            cu = torch.empty(3, dtype=torch.int32, device="cuda")
            flash_attn_varlen_func(q, k, v, cu_seqlens_q=cu, cu_seqlens_k=cu, max_seqlen_q=512, max_seqlen_k=512, causal=causal)

    configs = [
        ("fa4_fwd_d128", dict()),
        ("fa4_fwd_d128_causal", dict(causal=True)),
        ("fa4_fwd_d64", dict(head_dim=64)),
        ("fa4_fwd_d128_local", dict(window=(128, 0))),
        ("fa4_fwd_d128_gqa", dict(heads_kv=2, causal=True)),
        ("fa4_fwd_d128_sink", dict(sink=True, causal=True)),
        ("fa4_fwd_d128_fp16", dict(dtype=torch.float16)),
    ]
    varlen_configs = [("fa4_fwd_varlen_d128", dict()), ("fa4_fwd_varlen_d128_causal", dict(causal=True))]
    return [(name, lambda c=c: forward(**c)) for name, c in configs] + [
        (name, lambda c=c: varlen(**c)) for name, c in varlen_configs
    ]


FAMILIES = {"ours": ours, "quack": quack, "fa4": fa4}
ARCHS = {"ours": ("sm_90a", "sm_100a"), "quack": ("sm_90a", "sm_100a"), "fa4": ("sm_100a", "sm_90a"), "cutlass": ()}


def worker(family: str, arch: str, out: str) -> int:
    builders = FAMILIES[family](arch) if family != "cutlass" else cutlass_examples(arch)
    results = run_builders(builders, arch, in_hook=os.environ.get("SWEEP_PARSED") != "1")
    with open(out, "w", encoding="utf-8") as f:
        json.dump(results, f, indent=1)
    return 0


# --- CUTLASS's CuTeDSL examples ---------------------------------------------------------------
def cutlass_examples(arch: str) -> list:
    import cutlass_examples_sweep  # bench/cutlass_examples_sweep.py: one adapter per example

    return cutlass_examples_sweep.builders(arch, os.environ["CUTLASS_EXAMPLES_DIR"])


# --- the driver ------------------------------------------------------------------------------
def _env(family: str, arch: str, args) -> dict:
    env = dict(os.environ)
    env.update(
        CUTE_DSL_ARCH=arch, CUTE_DSL_LINEINFO="1", CUTE_DSL_KEEP="ptx",
        CUTE_DSL_DUMP_DIR=os.path.join(args.scratch, f"{family}_{arch}"), PYTHONPATH=os.pathsep.join(filter(None, [HERE, TESTS, os.environ.get("PYTHONPATH")])),
    )  # fmt: skip
    env.pop("CUTE_LOWERING_PIPELINE", None)
    if family == "fa4":
        env["PYTHONPATH"] += os.pathsep + args.fa4
        env.update(FLASH_ATTENTION_ARCH=arch.rstrip("a"), FLASH_ATTENTION_NUM_SMS="148" if arch == "sm_100a" else "132")
    if family == "cutlass":
        env["CUTLASS_EXAMPLES_DIR"] = args.cutlass
    return env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--families", default="ours,quack,fa4,cutlass")
    parser.add_argument("--archs", default="", help="only these archs (comma-separated)")
    parser.add_argument("--fa4", default="/tmp/h2/fa4", help="where flash-attn-4 4.0.0b36 is installed (pip --target)")
    parser.add_argument("--cutlass", default="", help="NVIDIA/cutlass examples/python/CuTeDSL as files")
    parser.add_argument("--json", default=os.path.join(HERE, "check_collectives_sweep.json"))
    parser.add_argument("--scratch", default="/tmp/check_collectives_sweep")
    parser.add_argument("--parsed", action="store_true", help="check each module printed and parsed back, after the compile")
    parser.add_argument("--keep-ir", default="", help="write every traced module (generic form, locations) under DIR/FAMILY (implies --parsed)")
    parser.add_argument("--recheck", default="", help="no compile: run the check again on the modules --keep-ir wrote under DIR")
    parser.add_argument("--worker", nargs=3, metavar=("FAMILY", "ARCH", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(*args.worker)
    if args.recheck:
        return recheck(args.recheck, args.json)
    os.makedirs(args.scratch, exist_ok=True)
    if args.parsed or args.keep_ir:
        os.environ["SWEEP_PARSED"] = "1"
    everything = []
    for family in args.families.split(","):
        archs = ARCHS[family] or ("sm_90a", "sm_100a")
        for arch in archs:
            if args.archs and arch not in args.archs.split(","):
                continue
            out = os.path.join(args.scratch, f"{family}_{arch}.json")
            command = [sys.executable, os.path.abspath(__file__), "--worker", family, arch, out]
            print(f"== {family} {arch}", flush=True)
            env = _env(family, arch, args)
            if args.keep_ir:
                env["SWEEP_KEEP_IR"] = os.path.join(os.path.abspath(args.keep_ir), family)
            code = subprocess.run(command, env=env, timeout=3600).returncode
            if code != 0 or not os.path.exists(out):
                everything.append({"kernel": f"{family} worker", "arch": arch, "compile_error": f"worker exited {code}", "traces": []})
                continue
            with open(out, encoding="utf-8") as f:
                for record in json.load(f):
                    record["family"] = family
                    everything.append(record)
    with open(args.json, "w", encoding="utf-8") as f:
        json.dump(everything, f, indent=1)
    print(table(everything))
    return 0


def recheck(directory: str, out: str) -> int:
    """The check again on the modules a `--keep-ir` run wrote (DIR/FAMILY/ARCH__KERNEL__I.mlir):
    no compile, so a change to the analysis is swept in minutes. Prints the table (compile
    time 0) and every finding; writes the records to `out` unless it is the sweep's own json."""
    sys.path[:0] = [ROOT]
    records: dict = {}
    for family in sorted(os.listdir(directory)):
        for name in sorted(os.listdir(os.path.join(directory, family))):
            arch, rest = name[: -len(".mlir")].split("__", 1)
            kernel = rest.rsplit("__", 1)[0]
            with open(os.path.join(directory, family, name), encoding="utf-8") as f:
                result = check_text(kernel, f.read())
            record = records.setdefault((family, arch, kernel), {"kernel": kernel, "arch": arch, "family": family, "traces": [], "analysis_s": 0.0})
            record["traces"].append(result)
            record["analysis_s"] += result["analysis_s"]
            for d in result["errors"] + result["warnings"]:
                print(f"{family} {arch} {kernel}: {d}")
    everything = list(records.values())
    if os.path.abspath(out) != os.path.abspath(os.path.join(HERE, "check_collectives_sweep.json")):
        with open(out, "w", encoding="utf-8") as f:
            json.dump(everything, f, indent=1)
    print(table(everything))
    return 0


def table(records: list[dict]) -> str:
    """The RESULTS.md table: one row per family and arch."""
    rows: dict = {}
    for r in records:
        key = (r.get("family", "?"), r["arch"])
        row = rows.setdefault(key, Counter())
        row["kernels"] += 1
        row["compile failed"] += bool(r.get("compile_error"))
        row["traced"] += len(r["traces"])
        row["collectives"] += sum(sum(t["collectives"].values()) for t in r["traces"])
        row["errors"] += sum(len(t["errors"]) for t in r["traces"])
        row["warnings"] += sum(len(t["warnings"]) for t in r["traces"])
        row["analysis_s"] += r.get("analysis_s", 0.0)
        row["compile_s"] += r.get("compile_s", 0.0)
    lines = [
        "| family | arch | kernels (compile failed) | modules | collectives seen | errors | warnings | analysis | compile | analysis/compile |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for (family, arch), row in sorted(rows.items()):
        share = row["analysis_s"] / row["compile_s"] if row["compile_s"] else 0.0
        lines.append(
            f"| {family} | {arch} | {row['kernels']} ({row['compile failed']}) | {row['traced']} | {row['collectives']} | "
            f"{row['errors']} | {row['warnings']} | {row['analysis_s']:.2f} s | {row['compile_s']:.1f} s | {share:.1%} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
