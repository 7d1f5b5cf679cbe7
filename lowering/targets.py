"""What CuTeDSL lowers natively, per (CuTeDSL release, target): measured facts, not hopes.

The data is `native_conversions.json`, written by `python -m cute_lowering.measure_targets`
(which compiles every conversion below through each release's own `cute.compile`
pipeline, for every target that release's `Arch` enum accepts, in subprocesses, one
venv per release). `auto` and the `arch=` option of `truncf-to-select`/`extf-to-select`
read it through `lowers_natively`: a conversion is left to CuTeDSL exactly where it
compiled there, and rewritten everywhere else.

A conversion is keyed `op:wide:narrow:shape`, e.g. `truncf:f32:f4E2M1FN:vector`
(`arith.truncf vector<8xf32> to vector<8xf4E2M1FN>`) or `extf:f4E2M1FN:bf16:scalar`:
op `truncf`/`extf`, the wide type f32/f16/bf16 (its name always second, so both
directions read `op:wide:narrow`), the narrow type, and `scalar` or `vector` (1-D).

Targets are exact strings: `sm_100` is not `sm_100a` (the FP4/E8M0 converts are
arch-specific features: ptxas rejects them for `sm_100`). `check_target` is the one
validator every entry point calls (pass options, the hook, `lowering-repro --arch`,
the kernels' compile functions): an unknown target is an error naming the targets the
installed CuTeDSL accepts. CuTeDSL's enum has aliases (`sm_101a` is `sm_110a` with
CUDA 13): they are accepted and looked up as the target they stand for.

A release that was not measured (a patch release newer than the table) uses the newest
measured release not newer than it, and says so in `table_release()`; one older than
every measured release has no table: every narrow conversion is rewritten (the rewrite
is exact, only slower than the hardware convert).
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
from pathlib import Path

from cute_lowering.closed_pipe import quiet_on_closed_stdout

TABLE_PATH = Path(__file__).with_name("native_conversions.json")

OPS = ("truncf", "extf")
WIDE_TYPES = ("f32", "f16", "bf16")
NARROW_TYPES = ("f4E2M1FN", "f8E4M3FN", "f8E5M2", "f8E8M0FNU")
SHAPES = ("scalar", "vector")
NEAREST_EVEN = "to_nearest_even"  # `arith.truncf`'s rounding when the op names none
# E8M0 has no nearest-even hardware convert (PTX: cvt.rz/.rp ... .ue8m0x2): every rounding our pass takes
E8M0_ROUNDINGS = (NEAREST_EVEN, "upward", "downward", "toward_zero")


def conversion_key(op: str, wide: str, narrow: str, vector: bool, rounding: str = NEAREST_EVEN) -> str:
    """`truncf:f32:f4E2M1FN:vector`; a truncf rounding other than nearest-even is a fifth field."""
    key = f"{op}:{wide}:{narrow}:{'vector' if vector else 'scalar'}"
    return key if rounding == NEAREST_EVEN else f"{key}:{rounding}"


# every conversion the table measures, in the table's order
CONVERSIONS = tuple(
    conversion_key(op, wide, narrow, shape == "vector", rounding)
    for op in OPS
    for narrow in NARROW_TYPES
    for rounding in (E8M0_ROUNDINGS if (op, narrow) == ("truncf", "f8E8M0FNU") else (NEAREST_EVEN,))
    for wide in WIDE_TYPES
    for shape in SHAPES
)


class UnknownTarget(ValueError):
    """A target string the installed CuTeDSL does not accept."""


def cutedsl_release() -> str:
    """The installed nvidia-cutlass-dsl version, e.g. '4.8.1'."""
    try:
        return importlib.metadata.version("nvidia-cutlass-dsl")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


@functools.cache
def load_table() -> dict:
    with open(TABLE_PATH, encoding="utf-8") as f:
        return json.load(f)


def _version_key(release: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in release.split(".")[:3])
    except ValueError:
        return ()


def table_release(release: str | None = None) -> str | None:
    """The measured release whose table applies to `release` (default: the installed one)."""
    release = release or cutedsl_release()
    measured = load_table()["releases"]
    if release in measured:
        return release
    key = _version_key(release)
    older = [r for r in measured if key and _version_key(r) <= key]
    return max(older, key=_version_key) if older else None


@functools.cache
def _enum_targets() -> dict[str, str]:
    """name -> canonical name, from the installed CuTeDSL's own `Arch` enum (unmeasured releases)."""
    import importlib

    for module in ("cutlass.base_dsl.enums", "cutlass.base_dsl.arch"):
        try:
            arch_enum = importlib.import_module(module).Arch
        except (ImportError, AttributeError):
            continue
        return {name: member.to_string() for name, member in arch_enum.__members__.items()}
    return {}


def known_targets(release: str | None = None) -> dict[str, str]:
    """Every target name the release accepts -> the target it compiles for (itself, or an alias's)."""
    measured = table_release(release)
    if measured is not None:
        return load_table()["releases"][measured]["targets"]
    return _enum_targets()


def check_target(arch: str, release: str | None = None) -> str:
    """`arch` itself if the release's CuTeDSL accepts it; else UnknownTarget saying which do."""
    targets = known_targets(release)
    if arch in targets:
        return arch
    release = release or cutedsl_release()
    listed = ", ".join(targets) if targets else "none found"
    hint = ""
    if arch.strip() in targets:
        hint = f" (no spaces: '{arch.strip()}')"
    raise UnknownTarget(f"unknown target '{arch}'{hint}: CuTeDSL {release} accepts {listed}")


def sm_version(arch: str) -> int:
    """`sm_90a` -> 90, for a target the installed CuTeDSL accepts; UnknownTarget otherwise."""
    canonical = known_targets()[check_target(arch)]
    return int(canonical[3:].rstrip("af"))


def native_conversions(arch: str, release: str | None = None) -> frozenset[str]:
    """The conversion keys CuTeDSL lowers itself for `arch` (validated) on `release`."""
    check_target(arch, release)
    measured = table_release(release)
    if measured is None:
        return frozenset()
    entry = load_table()["releases"][measured]
    return frozenset(entry["native"].get(entry["targets"][arch], ()))


def unusable(arch: str, release: str | None = None) -> str | None:
    """Why nothing at all compiles for `arch` on `release` (its enum lists a target its ptxas or
    libNVVM lacks, e.g. sm_107a in 4.8), or None. Such a target is accepted, as CuTeDSL accepts it."""
    check_target(arch, release)
    measured = table_release(release)
    if measured is None:
        return None
    entry = load_table()["releases"][measured]
    return entry.get("unusable", {}).get(entry["targets"][arch])


def lowers_natively(op: str, narrow: str, arch: str, wide: str = "f32", vector: bool = True,
                    rounding: str = NEAREST_EVEN, release: str | None = None) -> bool:
    """Whether `release`'s CuTeDSL compiles `op` between `wide` and `narrow` for `arch` itself.

    What the table did not measure (an f64 destination, a rounding it has no entry for)
    is not native: the exact rewrite is always safe, the hardware path only where seen.
    """
    return conversion_key(op, wide, narrow, vector, rounding) in native_conversions(arch, release)


SHORT = {"f4E2M1FN": "E2M1", "f8E4M3FN": "E4M3", "f8E5M2": "E5M2", "f8E8M0FNU": "E8M0"}
SHORT_ROUNDING = {NEAREST_EVEN: "rn", "upward": "rp", "downward": "rm", "toward_zero": "rz"}


def describe(conversions) -> str:
    """A short text for a set of conversion keys: `→E2M1` is every truncf to E2M1, `E8M0→` every
    extf from E8M0, `→E8M0.rp` one rounding (rn rp rm rz), `→E2M1(f16)` only from/to those wide
    types, `(f16 scalar)` one shape; `all` is every conversion measured."""
    chosen = set(conversions)
    if chosen >= set(CONVERSIONS):
        return "all"
    parts = []
    e8m0_truncf = {k for k in CONVERSIONS if k.startswith("truncf:") and ":f8E8M0FNU:" in k}
    if chosen >= e8m0_truncf:  # every rounding: one label
        parts.append("→E8M0")
        chosen -= e8m0_truncf
    groups: dict[tuple, list[str]] = {}
    for key in CONVERSIONS:
        op, _, narrow, _, *rounding = key.split(":")
        groups.setdefault((op, narrow, *rounding), []).append(key)
    for (op, narrow, *rounding), keys in groups.items():
        hit = [k for k in keys if k in chosen]
        if not hit:
            continue
        name = SHORT[narrow] + (f".{SHORT_ROUNDING[rounding[0]]}" if rounding else "")
        if (op, narrow) == ("truncf", "f8E8M0FNU") and not rounding:
            name += ".rn"
        label = f"→{name}" if op == "truncf" else f"{name}→"
        if len(hit) < len(keys):
            wides = [w for w in WIDE_TYPES if any(k.split(":")[1] == w for k in hit)]
            shapes = {k.split(":")[3] for k in hit}
            detail = ",".join(wides) + ("" if len(shapes) == 2 else f" {shapes.pop()}")
            label += f"({detail})"
        parts.append(label)
    return " ".join(parts) or "nothing"


def rewrites_by_release() -> str:
    """Markdown: what `auto` rewrites per target (rows) and measured release (columns); releases
    whose columns are equal share one, and so do targets whose rows are equal."""
    releases = list(load_table()["releases"])
    cells: dict[str, dict[str, str]] = {}
    for release in releases:
        for arch in known_targets(release):
            native = native_conversions(arch, release)
            cell = "nothing compiles" if unusable(arch, release) else describe(c for c in CONVERSIONS if c not in native)
            cells.setdefault(arch, {})[release] = cell
    columns: list[list[str]] = []  # runs of consecutive releases with equal columns
    for release in releases:
        if columns and all(row.get(release) == row.get(columns[-1][0]) for row in cells.values()):
            columns[-1].append(release)
        else:
            columns.append([release])
    rows: dict[tuple, list[str]] = {}
    for arch, row in cells.items():
        rows.setdefault(tuple(row.get(c[0], "not accepted") for c in columns), []).append(arch)
    heads = [c[0] if len(c) == 1 else f"{c[0]}-{c[-1]}" for c in columns]
    lines = ["| targets | " + " | ".join(heads) + " |", "| --- |" + " --- |" * len(heads)]
    for row, archs in rows.items():
        lines.append(f"| {', '.join(archs)} | " + " | ".join(row) + " |")
    return "\n".join(lines)


@quiet_on_closed_stdout
def main(argv: list[str] | None = None) -> int:
    """`python -m cute_lowering.targets [--release R | --markdown]`: what `auto` rewrites, per target."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m cute_lowering.targets", description=main.__doc__)
    parser.add_argument("--release", help="a CuTeDSL release (default: the installed one)")
    parser.add_argument("--markdown", action="store_true", help="every measured release, as a Markdown table")
    args = parser.parse_args(argv)
    if args.markdown:
        print(rewrites_by_release())
        return 0
    release = args.release or cutedsl_release()
    measured = table_release(release)
    print(f"CuTeDSL {release}: table of {measured or 'no measured release (everything rewritten)'}")
    for arch, canonical in known_targets(release).items():
        native = native_conversions(arch, release)
        alias = f" (= {canonical})" if canonical != arch else ""
        why = unusable(arch, release)
        what = f"nothing compiles ({why})" if why else f"auto rewrites {describe(c for c in CONVERSIONS if c not in native)}"
        print(f"{arch}{alias}: {what}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
