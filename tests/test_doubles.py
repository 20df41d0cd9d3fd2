"""The one list of test doubles (``doubles.CATALOGUE``) is in step with the doubles.

- every torch double the catalogue names exists in its module, and every engine class in
  the doubles' modules is in the catalogue, under its module;
- the fake engine's ``Misbehave`` switches are exactly the catalogue's switches and the
  settings that describe an honest engine;
- every check id it names is a declared id, and each module's docstring names the ids its
  doubles attack.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect

from doubles import CATALOGUE, FAKE_SETTINGS, engine_class
from doubles.fake_engine import Misbehave

from engines.baseline.model import BaselineEngine
from schemas.check_ids import CATALOG


def test_every_catalogued_torch_double_is_an_engine_class_of_its_module() -> None:
    for name, double in CATALOGUE.items():
        assert double.module or double.switches, f"{name} has no form"
        if double.module is None:
            continue
        module_name, class_name = engine_class(name).split(":")
        cls = getattr(importlib.import_module(module_name), class_name)
        assert issubclass(cls, BaselineEngine), name


def test_every_engine_class_of_the_doubles_is_catalogued() -> None:
    found = {}
    for stem in {d.module for d in CATALOGUE.values() if d.module}:
        module = importlib.import_module(f"doubles.{stem}")
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if (
                issubclass(cls, BaselineEngine)
                and cls.__module__ == module.__name__
                and not name.startswith("_")
            ):
                found[name] = stem
    assert found == {n: d.module for n, d in CATALOGUE.items() if d.module}


def test_the_fake_engines_switches_are_the_catalogues() -> None:
    fields = {f.name for f in dataclasses.fields(Misbehave)}
    switches = {s for d in CATALOGUE.values() for s in d.switches}
    assert switches | set(FAKE_SETTINGS) == fields, fields ^ (switches | set(FAKE_SETTINGS))
    assert not switches & set(FAKE_SETTINGS)


def test_the_catalogues_check_ids_are_declared_and_in_their_modules_docstrings() -> None:
    for name, double in CATALOGUE.items():
        assert set(double.attacks) <= set(CATALOG), (name, set(double.attacks) - set(CATALOG))
        if double.module is not None:
            doc = importlib.import_module(f"doubles.{double.module}").__doc__ or ""
            assert name in doc, (name, double.module)
            for check_id in double.attacks:
                assert check_id in doc, (name, double.module, check_id)
