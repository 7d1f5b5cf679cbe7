"""Real CuTeDSL kernels converting to and from the narrow floats with `TensorSSA.to`.

Each thread loads 8 values, converts them with CuTeDSL's own conversion (what a
kernel author writes), and stores them: the IR holds `arith.truncf`/`arith.extf` on
vector<8x...>, exactly what fails to compile on targets without the instruction.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import make_fake_compact_tensor

ELEMENTS = 1024
PER_THREAD = 8


def converter(source_type, destination_type):
    """A launcher converting a [1024] tensor of `source_type` to `destination_type`."""

    @cute.kernel
    def convert_kernel(src: cute.Tensor, dst: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        tile = cute.local_tile(src, (PER_THREAD,), (tidx,))
        out = cute.local_tile(dst, (PER_THREAD,), (tidx,))
        out.store(tile.load().to(destination_type))

    @cute.jit
    def launch(src: cute.Tensor, dst: cute.Tensor):
        convert_kernel(src, dst).launch(grid=(1, 1, 1), block=(ELEMENTS // PER_THREAD, 1, 1))

    def arguments():
        return (
            make_fake_compact_tensor(source_type, (ELEMENTS,)),
            make_fake_compact_tensor(destination_type, (ELEMENTS,)),
        )

    return launch, arguments


NARROW = {
    "f4E2M1FN": cutlass.Float4E2M1FN,
    "f8E4M3FN": cutlass.Float8E4M3FN,
    "f8E5M2": cutlass.Float8E5M2,
    "f8E8M0FNU": cutlass.Float8E8M0FNU,
}

# name -> (op, narrow type, launcher, arguments)
CASES = {}
for _name, _narrow in NARROW.items():
    CASES[f"f32_to_{_name}"] = ("truncf", _name, *converter(cutlass.Float32, _narrow))
    CASES[f"{_name}_to_f32"] = ("extf", _name, *converter(_narrow, cutlass.Float32))
CASES["bf16_to_f4E2M1FN"] = ("truncf", "f4E2M1FN", *converter(cutlass.BFloat16, cutlass.Float4E2M1FN))
CASES["f16_to_f8E4M3FN"] = ("truncf", "f8E4M3FN", *converter(cutlass.Float16, cutlass.Float8E4M3FN))
