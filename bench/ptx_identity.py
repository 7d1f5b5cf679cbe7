"""The PTX of every shipped build, as one sha256 per build: the check that a refactor is one.

    python bench/ptx_identity.py --out ptx.json                 # record
    python bench/ptx_identity.py --compare ptx.json [--out new.json] [--dump DIR]
    python bench/ptx_identity.py --compare bench/data/ptx_identity.json   # against the last record

Compiles each build below on the CPU for its target (no GPU: fake pointers, CuTeDSL's
`CUTE_DSL_ARCH`/`--gpu-arch`), keeps its PTX (`CUTE_DSL_KEEP=ptx`, no JIT cache), and writes
{build: sha256 of the PTX} (and beside it, `*.raw.json`, the hashes before the kernels'
symbols are normalized: see `normalized`). `--compare BASE.json` exits 1 naming every build whose PTX
differs from BASE's (or that is missing on either side). `--only SUB1,SUB2` keeps the builds
whose name contains one of them; `--list` prints the names.

The builds are the compile-time cross product of what ships, through the public compile
functions (`fmha.compile_attention`, `nvfp4.compile_*`): what varies at run time only (GQA
ratio, Sq != Sk, Sq = 1, tails, window sizes) is one build, so it is covered by the build of
its compile-time key (has-left, has-right, sink, dtype, head dim, output, path, group).
- wgmma (sm_90a): D 64/128 x masks (none, causal, window, left only) x sink x bf16/NVFP4
  output; the wide-key build (D=128, no mask); fp16 at two of them.
- mma_sync: the same on sm_90a (bf16 output at every mask and sink, NVFP4 at none/causal),
  sm_80 and sm_100a at two masks, the FMA exp2 (magic, natural).
- decode (fmha_decode, split + combine): the key-warps and split kernels, D 64/128, masks,
  sink; sm_80 and sm_100a once each.
- decode_wgmma (the packed split-KV kernel + combine): groups 2, 8, 128, D 64/128, masks,
  sink, the combine as a plain launch and as a PDL.
- NVFP4: quantize (given scale, "fptosi" variant, computed scale by cluster and by partials),
  amax (one value, partials), global scale, dequantize, for the input/output dtypes.
153 builds: ~15 minutes on an idle core here (each build runs in this one process), an hour
and more on a busy shared machine. The builds run round-robin over the five families and the
JSON is rewritten after each, so a run cut short is a sample of every family; `--common` with
`--compare` then compares the builds both sides have. `--from-dump DIR` rebuilds the JSON from
the PTX files a `--dump DIR` run left. `bench/data/ptx_identity.json`: the record of main at
c4151d6 and of issue 36's refactor (the same 153 hashes; nvidia-cutlass-dsl 4.8.1, sm_90a
builds on a CPU machine): another CuTeDSL release gives other PTX.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pathlib
import re
import sys
import tempfile
import time


MASKS = {"none": (-1, -1), "causal": (-1, 0), "window": (64, 0), "left": (64, -1)}


def builds() -> dict:
    """{name: a function returning the compiled object}: every build the script checks."""
    from cute_lowering.kernels import fmha, nvfp4

    out = {}

    def attn(name, **kw):
        out[name] = lambda kw=kw: fmha.compile_attention(**kw)

    for d in (64, 128):
        for mask, window in MASKS.items():
            for sink in (False, True):
                for fmt in ("bf16", "nvfp4"):
                    attn(f"wgmma/d{d}/{mask}/sink{int(sink)}/{fmt}", head_dim=d, window=window, sink=sink, path="wgmma", out_format=fmt)
                    if fmt == "nvfp4" and mask not in ("none", "causal"):
                        continue
                    attn(f"mma_sync/sm_90a/d{d}/{mask}/sink{int(sink)}/{fmt}", head_dim=d, window=window, sink=sink, path="mma_sync", out_format=fmt)
    attn("wgmma/d128/none/sink0/bf16/wide", head_dim=128, path="wgmma", wide_keys=True)
    attn("wgmma/d128/none/sink1/bf16/wide", head_dim=128, path="wgmma", wide_keys=True, sink=True)
    attn("wgmma/d64/causal/sink0/fp16", dtype="float16", head_dim=64, window=MASKS["causal"], path="wgmma")
    attn("wgmma/d128/none/sink0/fp16", dtype="float16", head_dim=128, path="wgmma")
    for arch in ("sm_80", "sm_100a"):
        for mask in ("none", "window"):
            attn(f"mma_sync/{arch}/d128/{mask}/sink1/bf16", head_dim=128, window=MASKS[mask], sink=True, path="mma_sync", arch=arch)
    attn("mma_sync/sm_90a/d64/none/sink0/fp16", dtype="float16", head_dim=64, path="mma_sync")
    for impl in ("magic", "natural"):
        attn(f"mma_sync/sm_90a/d128/causal/sink0/bf16/exp2_fma_{impl}", head_dim=128, window=MASKS["causal"], path="mma_sync",
             exp2_on_fma=0.25, exp2_impl=impl)  # fmt: skip

    from cute_lowering.kernels import fmha_decode, fmha_sm90

    def decode(name, *args, **kw):
        out[name] = lambda args=args, kw=kw: fmha_decode.compile_decode(*args, **kw)

    for d in (64, 128):
        for mask, window in MASKS.items():
            for sink in (False, True):
                left, right = window[0] >= 0, window[1] >= 0
                for key_warps in (False, True):
                    decode(f"decode/{'key_warps' if key_warps else 'split'}/d{d}/{mask}/sink{int(sink)}", "bfloat16", d, left, right, sink, "sm_90a",
                           key_warps=key_warps)  # fmt: skip
    decode("decode/split/sm_80/d128/causal/sink0", "bfloat16", 128, False, True, False, "sm_80")
    decode("decode/key_warps/sm_100a/d128/none/sink1", "bfloat16", 128, False, False, True, "sm_100a", key_warps=True)
    decode("decode/split/d128/none/sink0/fp16", "float16", 128, False, False, False, "sm_90a")

    def packed(name, *args, **kw):
        out[name] = lambda args=args, kw=kw: fmha_sm90.compile_packed_split(*args, **kw)

    for d in (64, 128):
        for group in (2, 8, 128):
            for mask, window in MASKS.items():
                for sink in (False, True):
                    if group != 8 and (sink or mask in ("window", "left")):
                        continue
                    left, right = window[0] >= 0, window[1] >= 0
                    packed(f"decode_wgmma/g{group}/d{d}/{mask}/sink{int(sink)}", "bfloat16", d, group, left, right, sink, "sm_90a")
    for pdl in (False, True):
        packed(f"decode_wgmma/g8/d128/none/sink0/combine_pdl{int(pdl)}", "bfloat16", 128, 8, False, False, False, "sm_90a", combine_pdl=pdl)

    def nv(name, fn, *args, **kw):
        out[name] = lambda fn=fn, args=args, kw=kw: fn(*args, **kw)

    for dtype in ("bfloat16", "float16", "float32"):
        nv(f"nvfp4/quantize/given/{dtype}", nvfp4.compile_quantize, dtype, "sm_90a")
        nv(f"nvfp4/quantize/cluster/{dtype}", nvfp4.compile_quantize, dtype, "sm_90a", scale="cluster")
        nv(f"nvfp4/quantize/partials/{dtype}", nvfp4.compile_quantize, dtype, "sm_90a", scale="partials")
        nv(f"nvfp4/amax/{dtype}", nvfp4.compile_amax, dtype, "sm_90a")
        nv(f"nvfp4/amax_partials/{dtype}", nvfp4.compile_amax, dtype, "sm_90a", partials=True)
        nv(f"nvfp4/global_scale/{dtype}", nvfp4.compile_global_scale, dtype, "sm_90a")
        nv(f"nvfp4/dequantize/{dtype}", nvfp4.compile_dequantize, dtype, "sm_90a")
    nv("nvfp4/quantize/given/bfloat16/fptosi", nvfp4.compile_quantize, "bfloat16", "sm_90a", "fptosi")
    nv("nvfp4/quantize/given/bfloat16/sm_100a", nvfp4.compile_quantize, "bfloat16", "sm_100a")
    nv("nvfp4/quantize/partials/bfloat16/sm_80", nvfp4.compile_quantize, "bfloat16", "sm_80", scale="partials")
    nv("nvfp4/dequantize/bfloat16/sm_100a", nvfp4.compile_dequantize, "bfloat16", "sm_100a")
    return out


def normalized(ptx: str) -> str:
    """The PTX with each kernel's symbol (`.entry NAME`, `NAME_param_N`) renamed `kernel_K` in order
    of appearance: CuTeDSL names a kernel after its Python module and class
    (`kernel_cutlass_kernel_kernelsfmha_sm90_FmhaSm90_object_at_...`), so moving a kernel class
    to another module renames it and changes nothing else. Everything else is compared as is."""
    names = list(dict.fromkeys(re.findall(r"\.entry\s+([A-Za-z_$][\w$]*)", ptx)))
    if not names:
        return ptx
    index = {name: i for i, name in enumerate(names)}
    pattern = re.compile("|".join(re.escape(name) for name in sorted(names, key=len, reverse=True)))
    return pattern.sub(lambda m: f"kernel_{index[m.group(0)]}", ptx)


def ptx_of(compiled) -> str:
    ptx = getattr(compiled, "__ptx__", None)
    if not ptx:
        raise RuntimeError("the compile kept no PTX (CUTE_DSL_KEEP=ptx was not honoured)")
    return ptx if isinstance(ptx, str) else ptx.decode()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="write {build: sha256} here")
    ap.add_argument("--compare", help="a JSON written by --out: exit 1 naming the builds that differ")
    ap.add_argument("--only", help="only the builds whose name contains one of these (comma-separated)")
    ap.add_argument("--dump", help="also write each build's PTX into this folder")
    ap.add_argument("--common", action="store_true", help="with --compare: only the builds both sides have")
    ap.add_argument("--from-dump", help="no compiles: hash the .ptx files a --dump run left in this folder")
    ap.add_argument("--list", action="store_true", help="print the build names and exit")
    ap.add_argument("--in-order", action="store_true", help="the builds family by family (default: round-robin over the families)")
    args = ap.parse_args(argv)
    workdir = tempfile.mkdtemp(prefix="ptx_identity_")
    os.environ.update({"CUTE_DSL_KEEP": "ptx", "CUTE_DSL_DUMP_DIR": workdir, "CUTE_DSL_NO_CACHE": "1"})
    os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
    todo = builds()
    if args.only:
        todo = {name: fn for name, fn in todo.items() if any(part in name for part in args.only.split(","))}
    if not args.in_order:
        # round-robin over the families (wgmma, mma_sync, decode, decode_wgmma, nvfp4), so that
        # any prefix of the run (a run cut short, a busy machine) is a sample of every family
        families: dict = {}
        for name in todo:
            families.setdefault(name.split("/")[0], []).append(name)
        order = [names[i] for i in range(max(map(len, families.values()), default=0)) for names in families.values() if i < len(names)]
        todo = {name: todo[name] for name in order}
    if args.list:
        print("\n".join(todo))
        return 0
    hashes, raw = {}, {}
    start = time.time()
    if args.from_dump:
        for path in sorted(pathlib.Path(args.from_dump).glob("*.ptx")):
            name = path.stem.replace("__", "/")
            if name in todo:
                ptx = path.read_text()
                hashes[name] = hashlib.sha256(normalized(ptx).encode()).hexdigest()
                raw[name] = hashlib.sha256(ptx.encode()).hexdigest()
        todo = {}
        if args.out:
            pathlib.Path(args.out).write_text(json.dumps(hashes, indent=1, sort_keys=True) + "\n")
            pathlib.Path(args.out).with_suffix(".raw.json").write_text(json.dumps(raw, indent=1, sort_keys=True) + "\n")
    for i, (name, build) in enumerate(todo.items()):
        ptx = ptx_of(build())
        hashes[name] = hashlib.sha256(normalized(ptx).encode()).hexdigest()
        raw[name] = hashlib.sha256(ptx.encode()).hexdigest()
        if args.dump:
            path = pathlib.Path(args.dump) / (name.replace("/", "__") + ".ptx")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(ptx)
        print(f"[{i + 1}/{len(todo)} {time.time() - start:6.0f}s] {name} {hashes[name][:16]}", flush=True)
        if args.out:  # (after every build: a run cut short keeps what it did)
            pathlib.Path(args.out).write_text(json.dumps(hashes, indent=1, sort_keys=True) + "\n")
            pathlib.Path(args.out).with_suffix(".raw.json").write_text(json.dumps(raw, indent=1, sort_keys=True) + "\n")
    if args.compare:
        base = json.loads(pathlib.Path(args.compare).read_text())
        if args.only:
            base = {name: h for name, h in base.items() if any(part in name for part in args.only.split(","))}
        if args.common:
            base = {name: h for name, h in base.items() if name in hashes}
            hashes = {name: h for name, h in hashes.items() if name in base}
        differ = sorted(name for name in hashes if name in base and base[name] != hashes[name])
        missing = sorted(set(base) ^ set(hashes))
        for name in differ:
            print(f"DIFFERS {name}")
        for name in missing:
            print(f"MISSING {name} ({'only in ' + args.compare if name in base else 'not in ' + args.compare})")
        same = len(hashes) - len(differ) - len(set(hashes) - set(base))
        print(f"{same} of {len(base)} builds byte-identical, {len(differ)} differ, {len(missing)} missing on one side")
        return 1 if differ or missing else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
