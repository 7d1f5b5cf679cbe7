"""Pass registry: names, typed options and documentation of every pass we provide.

A pass registers itself with `@register_pass`, giving its command-line name and its
options; the pipeline parser looks passes up here, and `lowering-opt --list-passes`
prints what is here. Option values arrive as text from MLIR's pipeline syntax
(`name{key=value key2=value}`) and are checked against the declared type.

Each pass also says which stage it belongs to (`STAGES`, lowering/stages.py): `pre` runs on
the traced CuTe module before CuTeDSL's pipeline, `post` on the LLVM/NVVM-dialect module
CuTeDSL's `cute-to-nvvm{llvm-only=true}` leaves, before PTX is generated.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable


# Where a pass runs inside `cute.compile` (lowering/post_stage.py draws the line):
# pre = on the traced module (CuTe, arith, scf, ...), post = on the lowered module (llvm, nvvm).
STAGES = ("pre", "post")


class OptionError(ValueError):
    """An option value that is unknown or of the wrong type."""


@dataclass(frozen=True)
class Option:
    """One typed pass option. `choices` makes it an enum; `kind` is bool, int or str."""

    name: str
    kind: type
    default: Any
    help: str
    choices: tuple[str, ...] = ()
    check: Callable[[str], Any] | None = None  # raises ValueError for a bad value

    def parse(self, text: str) -> Any:
        value = self._parse(text)
        if self.check is not None and value != self.default:
            try:
                self.check(value)
            except ValueError as e:
                raise OptionError(f"invalid value '{text}' for option '{self.name}': {e}") from None
        return value

    def _parse(self, text: str) -> Any:
        if self.choices:
            if text not in self.choices:
                raise OptionError(
                    f"invalid value '{text}' for option '{self.name}': expected one of "
                    + ", ".join(self.choices)
                )
            return text
        if self.kind is bool:
            lowered = text.lower()
            if lowered in ("true", "1", ""):
                return True
            if lowered in ("false", "0"):
                return False
            raise OptionError(f"invalid value '{text}' for option '{self.name}': expected true or false")
        if self.kind is int:
            try:
                return int(text, 0)
            except ValueError:
                raise OptionError(f"invalid value '{text}' for option '{self.name}': expected an integer") from None
        return text

    def describe(self) -> str:
        if self.choices:
            kind = "|".join(self.choices)
        else:
            kind = {bool: "bool", int: "int"}.get(self.kind, "string")
        default = str(self.default).lower() if self.kind is bool else self.default
        return f"{self.name}=<{kind}> (default {default}): {self.help}"


def choice(name: str, choices: tuple[str, ...], default: str, help: str) -> Option:
    return Option(name, str, default, help, tuple(choices))


def flag(name: str, default: bool, help: str) -> Option:
    return Option(name, bool, default, help)


def integer(name: str, default: int, help: str) -> Option:
    return Option(name, int, default, help)


def text(name: str, default: str, help: str, check: Callable[[str], Any] | None = None) -> Option:
    return Option(name, str, default, help, check=check)


@dataclass(frozen=True)
class PassInfo:
    name: str  # the pipeline/command-line name, e.g. "fptosi-to-ptx"
    cls: type
    options: tuple[Option, ...]
    stage: str = "pre"  # one of STAGES

    @property
    def description(self) -> str:
        return inspect.cleandoc(inspect.getdoc(self.cls) or "")

    @property
    def summary(self) -> str:
        return self.description.split("\n", 1)[0].strip()

    def parse_options(self, pairs: list[tuple[str, str]]) -> dict[str, Any]:
        """Typed option values from (key, text) pairs; unknown keys are an error."""
        by_name = {o.name: o for o in self.options}
        values = {o.name: o.default for o in self.options}
        for key, raw in pairs:
            option = by_name.get(key)
            if option is None:
                known = ", ".join(by_name) or "none"
                raise OptionError(f"pass '{self.name}' has no option '{key}' (options: {known})")
            values[key] = option.parse(raw)
        return values


_REGISTRY: dict[str, PassInfo] = {}


def register_pass(name: str, options: tuple[Option, ...] = (), stage: str = "pre") -> Callable[[type], type]:
    """Class decorator: make the pass available to pipelines under `name`, in `stage`."""
    if stage not in STAGES:
        raise ValueError(f"pass '{name}': stage must be one of {', '.join(STAGES)}, not {stage!r}")

    def decorate(cls: type) -> type:
        if name in _REGISTRY:
            raise RuntimeError(f"pass '{name}' registered twice")
        cls.pass_name = name
        _REGISTRY[name] = PassInfo(name, cls, tuple(options), stage)
        return cls

    return decorate


def get_pass(name: str) -> PassInfo | None:
    """The pass registered under `name` (the passes register themselves when `cute_lowering.passes`
    is imported, which `cute_lowering.pipeline` does: the table itself imports nothing above it)."""
    return _REGISTRY.get(name)


def list_passes() -> list[PassInfo]:
    return sorted(_REGISTRY.values(), key=lambda p: p.name)
