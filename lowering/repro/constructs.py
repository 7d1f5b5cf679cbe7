"""The constructs surveyed across CuTeDSL versions: each a minimal kernel body.

`kernel_ir(body, src, dst)` wraps a body in a `gpu.func` kernel that loads `%x` of
type `src` from its first argument and stores `%y` of type `dst` to its second, the
smallest module CuTeDSL's own pipeline compiles down to a cubin. The same text parses
and lowers in every release from 4.2 on (the CuTe `cuda.kernel` form does not exist
in the oldest ones).
"""

TEMPLATE = """module attributes {{gpu.container_module}} {{
  gpu.module @kernels {{
    gpu.func @kernel(%src: !llvm.ptr<1>, %dst: !llvm.ptr<1>) kernel {{
      %x = llvm.load %src : !llvm.ptr<1> -> {src}
{body}
      llvm.store %y, %dst : {dst}, !llvm.ptr<1>
      gpu.return
    }}
  }}
}}
"""


def kernel_ir(body: str, src: str, dst: str) -> str:
    lines = "\n".join("      " + line.strip() for line in body.strip().splitlines())
    return TEMPLATE.format(body=lines, src=src, dst=dst)


V8 = "vector<8x{}>"

# name -> (body, source type, destination type)
CONSTRUCTS = {
    "fptosi_f32_i32": ("%y = arith.fptosi %x : f32 to i32", "f32", "i32"),
    "fptosi_f32_i64": ("%y = arith.fptosi %x : f32 to i64", "f32", "i64"),
    "fptoui_f32_i8": ("%y = arith.fptoui %x : f32 to i8", "f32", "i8"),
    "fptosi_vector_f32_i32": ("%y = arith.fptosi %x : vector<8xf32> to vector<8xi32>", V8.format("f32"), V8.format("i32")),
    "arith_bitcast_f32_i32": ("%y = arith.bitcast %x : f32 to i32", "f32", "i32"),
    "llvm_bitcast_i32_f32": ("%y = llvm.bitcast %x : i32 to f32", "i32", "f32"),
    "llvm_inline_asm_cvt": ('%y = llvm.inline_asm "cvt.rni.s32.f32 $0, $1;", "=r,f" %x : (f32) -> i32', "f32", "i32"),
    "nvvm_inline_ptx_runtime": ('%y = nvvm.inline_ptx "cvt.rni.s32.f32 {$w0}, {$r0};" ro(%x : f32) -> i32', "f32", "i32"),
    "nvvm_inline_ptx_f32_constant": (
        '%c = arith.constant 1.5 : f32\n%y = nvvm.inline_ptx "add.rn.f32 {$w0}, {$r0}, {$r1};" ro(%x, %c : f32, f32) -> f32',
        "f32",
        "f32",
    ),
}
for _t in ("f4E2M1FN", "f8E4M3FN", "f8E5M2", "f8E8M0FNU"):
    _mode = " upward" if _t == "f8E8M0FNU" else ""
    CONSTRUCTS[f"truncf_f32_{_t}"] = (
        f"%y = arith.truncf %x{_mode} : vector<8xf32> to vector<8x{_t}>", V8.format("f32"), V8.format(_t)
    )
    CONSTRUCTS[f"extf_{_t}_f32"] = (f"%y = arith.extf %x : vector<8x{_t}> to vector<8xf32>", V8.format(_t), V8.format("f32"))


def construct_ir(name: str) -> str:
    return kernel_ir(*CONSTRUCTS[name])
