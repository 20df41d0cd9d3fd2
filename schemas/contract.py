"""Frozen dataclasses over validated JSON documents.

``Contract`` gives every contract class ``to_dict`` / ``from_dict``. ``from_dict`` expects
a document that already passed its JSON Schema; it converts nested members by the
field's type hint (dataclass, ``list[dataclass]``, optional) and keeps free-form
objects (``dict[str, Any]``) as they are. ``to_dict`` leaves out ``None`` members that
the document did not have, so ``from_dict(d).to_dict() == d`` for schema-valid ``d``.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, ClassVar, TypeVar, Union, get_args, get_origin

T = TypeVar("T", bound="Contract")


def _convert(tp: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        return _convert(args[0], value) if len(args) == 1 else value
    if origin in (list, tuple) and isinstance(value, list):
        (item_tp, *_) = get_args(tp) or (Any,)
        items = [_convert(item_tp, v) for v in value]
        return tuple(items) if origin is tuple else items
    if isinstance(tp, type) and issubclass(tp, Contract) and isinstance(value, dict):
        return tp.from_dict(value)
    return value


def _unconvert(value: Any) -> Any:
    if isinstance(value, Contract):
        return value.to_dict()
    if isinstance(value, (list, tuple)):
        return [_unconvert(v) for v in value]
    if isinstance(value, dict):
        return {k: _unconvert(v) for k, v in value.items()}
    return value


@dataclasses.dataclass(frozen=True)
class Contract:
    #: names of members that are written even when None (nullable in the schema)
    _keep_none: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def from_dict(cls: type[T], doc: dict[str, Any]) -> T:
        hints = typing.get_type_hints(cls)
        kwargs: dict[str, Any] = {}
        for field in dataclasses.fields(cls):
            key = field.metadata.get("json", field.name)
            if key in doc:
                kwargs[field.name] = _convert(hints[field.name], doc[key])
        return cls(**kwargs)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            key = field.metadata.get("json", field.name)
            if value is None and field.name not in self._keep_none:
                continue
            out[key] = _unconvert(value)
        return out
