"""The house's rules, read from the source with ``ast`` (nothing is imported).

- Every check id is judged once, in ``verifier/checks/``: no other module of the verifier
  makes a ``Finding``, a ``CheckResult`` or a ``CheckOutcome`` (nor calls the outcome
  helpers of ``verifier.checks.base``). Outside the verifier only the participant's side
  makes findings: ``submission`` (validate, package, the bundle reader intake reuses) and
  ``schemas`` (the challenge's engine-config rules, which both sides apply); the board,
  the engines and podium's base make none.
- Every id the catalogue declares for a verifier phase is named in ``verifier/checks/``.
- No product module over 500 lines, no function over 80 (docstring included).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from schemas import check_ids

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("podium", "schemas", "submission", "verifier", "leaderboard", "engines", "competition")
TOOLS = ("bench", "calibration", "training", "scripts")
#: what judges: the types of a judgment and the helpers that make one
MAKERS = {"Finding", "CheckResult", "CheckOutcome"}
HELPERS = {"passed", "failed", "judged", "raised", "skipped", "disabled", "unreliable"}
HELPERS |= {"not_evaluated"}
#: where findings may be made outside the verifier: the participant's side
PARTICIPANT_SIDE = ("submission", "schemas")
VERIFIER_PHASES = ("environment", "rebuild", "evaluation", "reference", "verdict")
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80


def sources(*folders: str) -> Iterator[Path]:
    for folder in folders:
        yield from sorted((ROOT / folder).rglob("*.py"))


def calls(tree: ast.AST) -> Iterator[tuple[str, int]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if name:
                yield name, node.lineno


def judgments(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        f"{path.relative_to(ROOT)}:{line} {name}" for name, line in calls(tree) if name in MAKERS
    ]


def helper_calls(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "verifier.checks.base"
        for alias in node.names
    }
    return [
        f"{path.relative_to(ROOT)}:{line} {name}"
        for name, line in calls(tree)
        if name in HELPERS and name in imported
    ]


def test_only_the_checks_judge_in_the_verifier() -> None:
    checks = ROOT / "verifier" / "checks"
    made = [
        hit
        for path in sources("verifier")
        if not path.is_relative_to(checks)
        for hit in judgments(path) + helper_calls(path)
    ]
    assert made == [], "judged outside verifier/checks/:\n" + "\n".join(made)


def test_findings_are_made_by_the_verifiers_checks_and_the_participants_side_only() -> None:
    elsewhere = [p for p in PRODUCT if p not in (*PARTICIPANT_SIDE, "verifier")]
    made = [hit for path in sources(*elsewhere) for hit in judgments(path)]
    assert made == [], "\n".join(made)


def test_every_verifier_phase_id_is_named_in_the_checks() -> None:
    named = {
        node.id
        for path in sources("verifier/checks")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Name)
    } | {
        node.attr
        for path in sources("verifier/checks")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Attribute)
    }
    constants = {
        value: name
        for name, value in vars(check_ids).items()
        if name.isupper() and isinstance(value, str) and value in check_ids.CATALOG
    }
    missing = [
        check_id
        for check_id, info in check_ids.CATALOG.items()
        if info.phase in VERIFIER_PHASES and constants.get(check_id) not in named
    ]
    assert missing == []


def test_a_judgment_made_elsewhere_is_found() -> None:
    """The scan above can fail: a finding made in a stage is seen, with its line."""
    tree = "from schemas.findings import Finding\nx = Finding('ppl.cap', 'error', 'm')\n"
    path = ROOT / "verifier" / "stages" / "_probe_of_the_scan.py"
    path.write_text(tree, encoding="utf-8")
    try:
        assert judgments(path) == ["verifier/stages/_probe_of_the_scan.py:2 Finding"]
    finally:
        path.unlink()


def _sizes(path: Path) -> Iterator[str]:
    text = path.read_text(encoding="utf-8")
    lines = text.count("\n")
    if lines > MAX_MODULE_LINES:
        yield f"{path.relative_to(ROOT)}: {lines} lines"
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                yield f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {length} lines"


@pytest.mark.parametrize("folder", [*PRODUCT, *TOOLS])
def test_modules_and_functions_stay_small(folder: str) -> None:
    """One concept per module: none over 500 lines, no function over 80."""
    large = [hit for path in sources(folder) for hit in _sizes(path)]
    assert large == [], "\n".join(large)
