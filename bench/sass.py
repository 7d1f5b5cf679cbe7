"""SASS of a cubin without a GPU: the disassembler, opcode counts, and the loops.

    from sass import disassemble, opcodes, loops
    text = disassemble(cubin_bytes)          # cuobjdump on PATH, else nvdisasm (PATH or the
                                             # nvidia-cuda-nvdisasm wheel, in the test extra)
    opcodes(text)                            # Counter of base opcodes ("F2FP", "HGMMA", ...), NOPs left out
    for loop in loops(text): ...             # one per backward branch: label, span, opcodes
    innermost(loops(text), "HGMMA")          # those issuing HGMMA that hold no other such loop
    count_before(text, loop, "MUFU", stop)   # MUFUs of a loop before its first instruction stop() picks

A loop here is the span from a label to a later branch back to it, as it lies in the code:
ptxas places a loop's blocks together, so for the FMHA key loops that span is the loop body
(possibly with a rarely taken block laid out inside it); nested spans are listed separately.
"""

from __future__ import annotations

import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass

# one SASS instruction: /*addr*/  [@P0 | @!UP1 ]OPCODE.MODIFIERS operands ;
_INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P[T\d]+\s+)?([A-Z][A-Z0-9_.]*)([^;]*);")
_LABEL = re.compile(r"^\s*(\.L_x_\d+):")


class NoDisassembler(RuntimeError):
    """Neither cuobjdump nor nvdisasm is available."""


def disassembler() -> list[str]:
    """The command that prints a cubin's SASS: cuobjdump, or nvdisasm (PATH, then the wheel's)."""
    found = shutil.which("cuobjdump")
    if found:
        return [found, "--dump-sass"]
    found = shutil.which("nvdisasm")
    if not found:
        for path in sys.path:  # nvidia-cuda-nvdisasm puts it under nvidia/cu*/bin
            folder = os.path.join(path, "nvidia")
            if os.path.isdir(folder):
                for sub in sorted(os.listdir(folder)):
                    candidate = os.path.join(folder, sub, "bin", "nvdisasm")
                    if os.access(candidate, os.X_OK):
                        found = candidate
                        break
            if found:
                break
    if not found:
        raise NoDisassembler("no cuobjdump or nvdisasm: pip install nvidia-cuda-nvdisasm (the test extra has it)")
    return [found, "-c"]


def disassemble(cubin: bytes, command: list[str] | None = None) -> str:
    """The SASS text of `cubin` (an ELF cubin, as CuTeDSL keeps it with --keep-cubin);
    `command`: the disassembler to use (default: `disassembler()`)."""
    command = command or disassembler()
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "kernel.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        run = subprocess.run(command + [path], capture_output=True, text=True)
    if run.returncode:
        raise RuntimeError(f"{os.path.basename(command[0])} failed: {run.stderr.strip()[:300]}")
    return run.stdout


def _base(opcode: str) -> str:
    return opcode.split(".")[0]


def opcodes(text: str) -> collections.Counter:
    """Base opcodes of every instruction in `text`, NOPs left out."""
    return collections.Counter(_base(m.group(2)) for m in _INSTRUCTION.finditer(text) if not m.group(2).startswith("NOP"))


@dataclass
class Loop:
    label: str
    first: int  # index of its first instruction in the code
    last: int  # index of the branch back
    size: int  # instructions from the label to the branch back, NOPs left out
    counts: collections.Counter

    def holds(self, other: "Loop") -> bool:
        return other is not self and self.first <= other.first and other.last <= self.last


def instructions(text: str) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """(each label's index into the code, the code: (opcode, operands) an instruction, in order);
    Loop.first and Loop.last index this list."""
    labels: dict[str, int] = {}
    code: list[tuple[str, str]] = []
    for line in text.splitlines():
        label = _LABEL.match(line)
        if label:
            labels[label.group(1)] = len(code)
            continue
        m = _INSTRUCTION.search(line)
        if m:
            code.append((m.group(2), m.group(3)))
    return labels, code


def count_before(text: str, loop: "Loop", opcode: str, stop) -> int | None:
    """How many `opcode` instructions (base opcode) of `loop` come before its first instruction
    for which stop(opcode, operands) holds; None if none does."""
    _, code = instructions(text)
    seen = 0
    for op, operands in code[loop.first : loop.last + 1]:
        if stop(op, operands):
            return seen
        seen += _base(op) == opcode
    return None


def loops(text: str) -> list[Loop]:
    """Every backward branch's span, in code order."""
    labels, code = instructions(text)
    found = []
    for index, (opcode, operands) in enumerate(code):
        if not opcode.startswith("BRA"):
            continue
        target = re.search(r"(\.L_x_\d+)", operands)
        if target and labels.get(target.group(1), index + 1) <= index:
            start = labels[target.group(1)]
            body = [_base(op) for op, _ in code[start : index + 1] if not op.startswith("NOP")]
            found.append(Loop(target.group(1), start, index, len(body), collections.Counter(body)))
    return found


def innermost(found: list[Loop], opcode: str) -> list[Loop]:
    """The loops that issue `opcode` and hold no other loop that does (mbarrier retry loops
    without it may lie inside)."""
    issuing = [loop for loop in found if loop.counts[opcode]]
    return [loop for loop in issuing if not any(loop.holds(other) for other in issuing)]
