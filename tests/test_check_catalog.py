"""The check-id catalog is the one truth: docs, code and tests agree with it.

- ``docs/measurement.md``'s id table lists exactly the catalog's ids, with the same
  phase, severity and effect.
- Every id the product code emits (as a ``Finding``/``CheckResult`` literal, or through a
  helper whose first parameter is the id) is declared, and the product code names every
  declared id through its constant in ``schemas/check_ids.py``: no string literal of one
  anywhere else, so an id lives in one place.
- Every declared id has a test that makes it fire and one that keeps it quiet, marked
  ``@pytest.mark.fires(...)`` / ``@pytest.mark.quiet(...)`` on a test that asserts it.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

from schemas.check_ids import CATALOG

REPO = Path(__file__).resolve().parents[1]
PRODUCT = ("podium", "schemas", "submission", "verifier", "leaderboard")
ROW = re.compile(r"^\| `([a-z0-9.-]+)` \| (\w+) \| (\w+) \| (\w+) \| (.+) \|$")
#: what a check id looks like (file names such as ``config.json`` do not)
ID = re.compile(
    r"^(bundle|env|image|ppl|tps|integrity|verdict|config|engine|submission)\.[a-z][a-z0-9-]*$"
)


def doc_rows() -> dict[str, tuple[str, str, str]]:
    text = (REPO / "docs" / "measurement.md").read_text()
    table = text.split("## Check ids", 1)[1]
    return {m[1]: (m[2], m[3], m[4]) for line in table.splitlines() if (m := ROW.match(line))}


def test_the_docs_table_is_the_catalog() -> None:
    rows = doc_rows()
    assert set(rows) == set(CATALOG), set(rows) ^ set(CATALOG)
    for check_id, (phase, severity, effect) in rows.items():
        info = CATALOG[check_id]
        assert (phase, severity, effect) == (info.phase, info.severity, info.effect), check_id


def _emitted_literals() -> dict[str, list[str]]:
    """String literals passed as a check id anywhere in the product packages."""
    files = [p for pkg in PRODUCT for p in (REPO / pkg).rglob("*.py") if "data" not in p.parts]
    trees = {p: ast.parse(p.read_text()) for p in files}
    id_params: set[str] = {"Finding", "CheckResult"}
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.args.args:
                first = node.args.args[0].arg
                if first in ("check_id", "finding_id"):
                    id_params.add(node.name)
    found: dict[str, list[str]] = defaultdict(list)
    for path, tree in trees.items():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            values = [k.value for k in node.keywords if k.arg in ("check_id", "finding_id")]
            if name in id_params and node.args:
                values.append(node.args[0])
            for value in values:
                if (
                    isinstance(value, ast.Constant)
                    and isinstance(value.value, str)
                    and ID.match(value.value)
                ):
                    found[value.value].append(f"{path.relative_to(REPO)}:{node.lineno}")
    return found


def test_every_id_the_code_emits_is_declared() -> None:
    undeclared = {k: v for k, v in _emitted_literals().items() if k not in CATALOG}
    assert not undeclared, undeclared


def test_the_product_names_every_declared_id_through_its_constant() -> None:
    catalogue = REPO / "schemas" / "check_ids.py"
    literals = sorted(
        f"{path.relative_to(REPO)}:{node.lineno} {node.value!r}"
        for pkg in PRODUCT
        for path in (REPO / pkg).rglob("*.py")
        if "data" not in path.parts and path != catalogue
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in CATALOG
    )
    assert not literals, "use the constants of schemas/check_ids.py:\n" + "\n".join(literals)


def _marked() -> dict[str, dict[str, set[str]]]:
    """id -> {"fires": tests, "quiet": tests}, from the markers in tests/."""
    out: dict[str, dict[str, set[str]]] = defaultdict(lambda: {"fires": set(), "quiet": set()})
    for path in (REPO / "tests").rglob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for deco in node.decorator_list:
                call = deco if isinstance(deco, ast.Call) else None
                kind = getattr(getattr(call, "func", None), "attr", None)
                if call is None or kind not in ("fires", "quiet"):
                    continue
                for arg in call.args:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                        out[arg.value][kind].add(f"{path.name}::{node.name}")
    return out


def test_every_declared_id_has_a_test_that_fires_it_and_one_that_keeps_it_quiet() -> None:
    marked = _marked()
    missing = {
        check_id: [kind for kind in ("fires", "quiet") if not marked[check_id][kind]]
        for check_id in CATALOG
    }
    missing = {k: v for k, v in missing.items() if v}
    assert not missing, missing
    unknown = set(marked) - set(CATALOG)
    assert not unknown, f"markers name undeclared ids: {unknown}"
