"""The import graph: no cycle between modules, and packages depend one way.

Read from the source with ``ast`` (nothing is imported): every import a module runs when
it is loaded, at module level or inside a function or method (a lazy import is still an
edge: hiding a cycle inside a function does not remove it), except those under ``if
TYPE_CHECKING:`` (never executed). An import of ``pkg.name`` counts as an edge to the
module ``pkg.name`` when that is a module, else to ``pkg``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = (
    "podium",
    "schemas",
    "submission",
    "verifier",
    "leaderboard",
    "engines",
    "competition",
)

#: what each layer may import (besides itself). ``podium`` is the base every package uses
#: (errors, canonical JSON, signing, the Hub): it imports no package and not the CLI.
#: ``podium.cli`` is the top floor: it wires everything, and nothing imports it.
ALLOWED: dict[str, set[str]] = {
    "podium": set(),
    "schemas": {"podium"},
    "submission": {"podium", "schemas", "engines"},  # the knob mappings engines define
    "leaderboard": {"podium", "schemas"},
    "verifier": {"podium", "schemas", "submission", "leaderboard", "engines"},
    "engines": set(),
    # the competition around the verification: a door, a roster, quotas, a database queue
    "competition": {"podium", "schemas", "submission", "verifier", "leaderboard"},
    "podium.cli": set(PACKAGES),
}
LAYERS = (*PACKAGES, "podium.cli")


def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "data" in path.relative_to(ROOT).parts[1:2]:
                continue
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _type_checking(node):
            yield from (n for n in _walk(node.orelse))
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        yield from _imports(node)


def _walk(nodes: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in nodes:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        yield from _imports(node)


def edges(known: dict[str, Path]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in known}
    for name, path in known.items():
        is_package = path.name == "__init__.py"
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = name.split(".")
                    if not is_package:
                        anchor = anchor[:-1]
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                targets = [f"{base}.{a.name}" for a in node.names] + [base]
            for target in targets:
                while target and target not in known:
                    target = target.rpartition(".")[0]
                if target and target != name and target.split(".")[0] in PACKAGES:
                    graph[name].add(target)
                    break
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def packages_graph(graph: dict[str, set[str]], known: dict[str, Path]) -> dict[str, set[str]]:
    """The same graph between (sub-)packages: a module stands for the package holding it."""

    def home(m: str) -> str:
        return m if known[m].name == "__init__.py" else m.rpartition(".")[0] or m

    out: dict[str, set[str]] = {}
    for a, targets in graph.items():
        out.setdefault(home(a), set())
        for b in targets:
            hb = home(b)
            out.setdefault(hb, set())
            # a package importing its own sub-package (or the reverse) is one tree, not a cycle
            if (
                hb != home(a)
                and not hb.startswith(home(a) + ".")
                and not home(a).startswith(hb + ".")
            ):
                out[home(a)].add(hb)
    return out


def layer(module: str) -> str:
    return "podium.cli" if module.startswith("podium.cli") else module.split(".")[0]


def test_no_module_imports_itself_back_through_others() -> None:
    import sys

    sys.setrecursionlimit(10_000)
    found = cycles(edges(modules()))
    assert found == [], "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_no_package_imports_itself_back_through_others() -> None:
    known = modules()
    found = cycles(packages_graph(edges(known), known))
    assert found == [], "package cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    """``a imports b`` for every edge between layers that ``ALLOWED`` does not allow."""
    return sorted(
        f"{a} imports {b}"
        for a, targets in graph.items()
        for b in targets
        if layer(b) != layer(a) and layer(b) not in ALLOWED[layer(a)]
    )


def test_packages_depend_one_way() -> None:
    assert layer_violations(edges(modules())) == []


def test_the_base_imports_neither_the_cli_nor_any_package() -> None:
    """Every ``podium.*`` module outside ``podium.cli`` stands below the packages and the CLI."""
    graph = edges(modules())
    base = {m for m in graph if layer(m) == "podium"}
    assert "podium.errors" in base and "podium.cli.app" not in base
    above = sorted(f"{a} imports {b}" for a in base for b in graph[a] if layer(b) != "podium")
    assert above == []
    assert ALLOWED["podium"] == set()


def test_nothing_imports_the_cli_but_the_cli() -> None:
    assert all("podium.cli" not in ALLOWED[name] for name in PACKAGES)


def test_nothing_below_imports_the_competition() -> None:
    """``competition`` stands above ``verifier`` and ``leaderboard``: only the CLI uses it."""
    assert all("competition" not in ALLOWED[name] for name in PACKAGES if name != "competition")
    graph = edges(modules())
    wrong = sorted(
        f"{a} imports {b}"
        for a, targets in graph.items()
        if layer(a) not in ("competition", "podium.cli")
        for b in targets
        if layer(b) == "competition"
    )
    assert wrong == []


def test_the_participant_side_and_the_board_never_import_the_verifier() -> None:
    assert "verifier" not in ALLOWED["submission"] | ALLOWED["leaderboard"]
    graph = edges(modules())
    wrong = sorted(
        f"{a} imports {b}"
        for a, targets in graph.items()
        if layer(a) in ("submission", "leaderboard")
        for b in targets
        if layer(b) == "verifier"
    )
    assert wrong == []


@pytest.mark.parametrize(
    ("importer", "imported"),
    [
        ("podium.errors", "podium.cli.output"),  # the base reaching up to the CLI
        ("podium.hub", "leaderboard.stores"),  # the base reaching up to a package
        ("podium", "schemas.challenge"),  # the package's own __init__ is the base too
        ("submission.bundle", "verifier.pipeline"),
        ("leaderboard.publish", "verifier.report"),
        ("verifier.pipeline", "podium.cli.verify_cmd"),
        ("verifier.scale.worker", "competition.client"),
        ("leaderboard.publish", "competition.door"),
    ],
)
def test_the_layer_rule_catches_an_edge_that_runs_up(importer: str, imported: str) -> None:
    """The rule itself: each of these edges, planted in a graph, is reported."""
    assert layer_violations({importer: {imported}}) == [f"{importer} imports {imported}"]


def test_the_layer_rule_lets_the_cli_wire_everything() -> None:
    graph = {"podium.cli.app": {f"{p}.x" if p != "podium" else "podium.errors" for p in PACKAGES}}
    assert layer_violations(graph) == []
    assert set(LAYERS) == set(ALLOWED)


def test_the_graph_reader_sees_a_cycle_and_a_lazy_import(tmp_path: Path) -> None:
    """The reader itself: a cycle made through a function-level import is found."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    tree = ast.parse("def f():\n    import verifier.pipeline\nif TYPE_CHECKING:\n    import x\n")
    assert [type(n).__name__ for n in _imports(tree)] == ["Import"]
