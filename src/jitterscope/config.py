"""The one validation layer for configuration files (and other structured input).

Every YAML file the tool reads (doe plans, ptts models, and the tune, sync,
protect, place and pipeline files to come), every inline spec (`simulate
--noise`) and the run directory's own JSON (meta.json, summary.json) is
checked against a pydantic model here. Any mistake becomes ONE line naming the
file, the key path and what was expected, raised as `JitterscopeError`
(exit code 2), before anything on the machine is changed:

    plan.yaml: factors[2].kind is missing
    plan.yaml: unknown key 'colour' (expected: budget, design, factors, ...)
    model.yaml: components['gpu']: unknown key 'perod' (expected: etp, name, offset, period)
    plan.yaml: replications must be a positive integer, got -1

Example (a new command's file format):

    from jitterscope.config import ConfigModel, CpuList, Duration, Seed, load_config

    class TuneFile(ConfigModel):
        cpus: CpuList                 # "2-3" -> [2, 3], bounded by the machine
        duration: Duration = 2.0      # "500ms" -> 0.5 (seconds)
        seed: Seed = 1

    cfg = load_config(path, TuneFile)      # a TuneFile, or one line and exit 2

Models derive from `ConfigModel` (unknown keys are errors: `extra="forbid"`).
Checks that need more than one field (or the machine) raise `ValueError` from a
validator with a message that reads after the key path ("must be ...").
"""

from __future__ import annotations

import re
import types
import typing
from pathlib import Path
from typing import Annotated, Any, ClassVar, TypeVar

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from jitterscope import boundedio
from jitterscope.errors import JitterscopeError
from jitterscope.units import DURATION_BOUNDS, parse_cpulist, parse_duration_s

M = TypeVar("M", bound=BaseModel)


class ConfigModel(BaseModel):
    """Base of every configuration model: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    # How an unknown key reads after the key path; {key} and {expected} are filled in.
    unknown_key: ClassVar[str] = "unknown key {key!r} (expected: {expected})"


class OpenModel(BaseModel):
    """A mapping whose extra keys are passed on (e.g. a factor's kind-specific settings)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


def _as_value_error(fn: Any) -> Any:
    """Run a units.py parser inside a validator: its UsageError becomes pydantic's ValueError."""

    def run(v: Any) -> Any:
        if v is None or isinstance(v, bool):
            raise ValueError(f"must be a value with a unit, got {v!r}")
        try:
            return fn(v)
        except JitterscopeError as err:
            raise ValueError(str(err)) from None

    return run


def _int_only(v: Any) -> Any:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"must be an integer, got {v!r}")
    return v


# Shared field types: one spelling of each kind of value across every file.
Duration = Annotated[float, BeforeValidator(_as_value_error(lambda v: parse_duration_s(v)))]
"""Seconds, from `250ms`, `2.5us`, `10s` (a unit is required; bounded like every duration)."""


def duration_like(option: str) -> Any:
    """A duration field bounded like the command-line option `option` (units.DURATION_BOUNDS)."""
    bounds = DURATION_BOUNDS[option]
    return Annotated[float, BeforeValidator(_as_value_error(lambda v: parse_duration_s(v, bounds=bounds)))]


DurationOrZero = Annotated[float, BeforeValidator(_as_value_error(lambda v: parse_duration_s(v, allow_zero=True)))]
CpuList = Annotated[list[int], BeforeValidator(_as_value_error(lambda v: parse_cpulist(str(v))))]
"""CPU numbers from the kernel's list syntax (`1,3`, `2-5`), bounded by the machine's possible CPUs."""
Seed = Annotated[int, BeforeValidator(_int_only), Field(ge=0, le=2**63 - 1)]
"""A random seed: a non-negative integer."""
PositiveInt = Annotated[int, BeforeValidator(_int_only), Field(ge=1)]


def read_yaml(path: str | Path, what: str = "file") -> Any:
    """The parsed YAML of `path`, or one line saying why it cannot be read."""
    p = Path(path)
    return parse_yaml(boundedio.read_text(p, what), str(p))


def parse_yaml(text: str, source: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise JitterscopeError(f"{source}: not valid YAML{where} ({getattr(err, 'problem', None) or err})") from None


def load_config(path: str | Path, model: type[M], what: str = "file") -> M:
    """Read the YAML file at `path` and validate it as `model`; one-line JitterscopeError otherwise."""
    return validate(read_yaml(path, what), model, str(path))


def validate(data: Any, model: type[M], source: str, error: type[JitterscopeError] = JitterscopeError) -> M:
    """`data` (already parsed) as `model`; a mistake raises `error` with one line starting `source: `."""
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise error(one_line(err, source, data, model)) from None


def one_line(err: ValidationError, source: str, data: Any = None, model: type[BaseModel] | None = None) -> str:
    """The first error of `err` as `SOURCE: key.path must be ...` (pydantic reports all; one is enough)."""
    errors = err.errors(include_url=False)
    # an unknown key first: `perod:` also makes `period` missing, and the typo is what to fix
    e = next((x for x in errors if x.get("type") == "extra_forbidden"), errors[0])
    loc = tuple(e.get("loc", ()))
    kind = e.get("type", "")
    path = _path(loc, data)
    if kind == "extra_forbidden":
        parent = _path(loc[:-1], data)
        cls = _model_at(model, loc[:-1])
        if cls is None:
            return _join(source, parent, f": unknown key {str(loc[-1])!r}")
        known = ", ".join(sorted((f.alias or n) for n, f in cls.model_fields.items()))
        text = getattr(cls, "unknown_key", ConfigModel.unknown_key).format(key=str(loc[-1]), expected=known)
        return _join(source, parent, ": " + text)
    if kind == "missing":
        return _join(source, path, " is missing")
    got = e.get("input")
    if kind in ("value_error", "assertion_error"):
        msg = str(e.get("ctx", {}).get("error", e.get("msg", "")))
        return _join(source, path, (" " if msg.startswith(("must ", "is ")) else ": ") + msg)
    return _join(source, path, f" must be {_expected(kind, e.get('ctx') or {}, e.get('msg', ''))}, got {_show(got)}")


def _join(source: str, path: str, rest: str) -> str:
    if not path:
        rest = rest.lstrip(": ").lstrip()
    return f"{source}: {path}{rest}"


def _show(v: Any) -> str:
    text = repr(v) if not isinstance(v, dict) else "a mapping"
    if isinstance(v, list) and v:
        text = f"a list of {len(v)}"
    return text if len(text) <= 60 else text[:57] + "..."


_EXPECTED = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "finite_number": "a finite number",
    "string_type": "a string",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
}


def _expected(kind: str, ctx: dict[str, Any], msg: str) -> str:
    if kind in _EXPECTED:
        return _EXPECTED[kind]
    if kind == "greater_than_equal":
        return "a positive integer" if ctx.get("ge") == 1 else f"at least {ctx.get('ge')}"
    if kind == "greater_than":
        return f"greater than {ctx.get('gt')}"
    if kind == "less_than_equal":
        return f"at most {ctx.get('le')}"
    if kind == "less_than":
        return f"less than {ctx.get('lt')}"
    if kind == "too_short":
        return "a non-empty list" if ctx.get("min_length") == 1 else f"a list of at least {ctx.get('min_length')}"
    if kind == "too_long":
        return f"a list of at most {ctx.get('max_length')}"
    if kind == "literal_error":
        return f"one of {ctx.get('expected')}"
    return msg[0].lower() + msg[1:] if msg else "something else"


def _path(loc: tuple[Any, ...], data: Any) -> str:
    """`factors[2].kind`; a list item with a `name` is shown by it: `components['gpu'].period`."""
    out = ""
    node = data
    for part in loc:
        if isinstance(part, int):
            item = node[part] if isinstance(node, list) and 0 <= part < len(node) else None
            name = item.get("name") if isinstance(item, dict) else None
            out += f"[{name!r}]" if isinstance(name, str) and name else f"[{part}]"
            node = item
        else:
            if _is_union_tag(part, node):
                continue
            out += ("." if out else "") + str(part)
            node = node.get(part) if isinstance(node, dict) else None
    return out


_SCHEMA_TAG = re.compile(r"^[a-z]+(-[a-z]+)+$")  # constrained-int, function-after, lax-or-strict, ...


def _is_union_tag(part: Any, node: Any) -> bool:
    """Whether `part` of an error's location is pydantic's name for a union member, not a key:
    `outputs.constrained-int` would leak pydantic's internals to the user."""
    if not isinstance(part, str):
        return False
    if "[" in part or _SCHEMA_TAG.match(part):
        return True
    if node is not None and not isinstance(node, (dict, list)):
        return True  # a scalar has no keys
    return isinstance(node, dict) and part not in node and part[:1].isupper()  # a model class: PortSpec


def _model_at(model: type[BaseModel] | None, loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model class at `loc` (best effort: None when the path cannot be followed)."""
    cls: Any = model
    for part in loc:
        if isinstance(part, int):
            cls = _inner(cls, list)
            continue
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)):
            return None
        fields = {(f.alias or n): f for n, f in cls.model_fields.items()}
        if part not in fields:
            return None
        cls = _unwrap(fields[part].annotation)
    return cls if isinstance(cls, type) and issubclass(cls, BaseModel) else None


def _unwrap(tp: Any) -> Any:
    """The model class inside Optional[...] / list[...] / Annotated[...], if there is exactly one."""
    while True:
        origin = typing.get_origin(tp)
        if origin is Annotated:
            tp = typing.get_args(tp)[0]
        elif origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            models = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
            if len(args) == 1:
                tp = args[0]
            elif len(models) == 1:
                tp = models[0]
            else:
                return tp
        else:
            return tp


def _inner(tp: Any, container: type) -> Any:
    tp = _unwrap(tp)
    if typing.get_origin(tp) is container:
        args = typing.get_args(tp)
        return _unwrap(args[0]) if args else None
    return None
