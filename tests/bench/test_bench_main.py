"""``python -m bench``: every module of ``bench/`` is a part of it or a named helper, so a
new study cannot be left out; ``--list`` names the parts; a part whose machine lacks what
it needs is skipped with the reason."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from bench import __main__ as runner

BENCH = Path(runner.__file__).resolve().parent


def test_every_module_under_bench_is_a_part_or_a_helper() -> None:
    modules = {p.stem for p in BENCH.glob("*.py")}
    parts = {part.module for part in runner.PARTS.values()}
    assert not parts & set(runner.HELPERS), "a module is either a part or a helper"
    known = parts | set(runner.HELPERS)
    assert modules == known, (
        f"neither a part of python -m bench nor a helper: {sorted(modules - known)}; "
        f"named but missing: {sorted(known - modules)}"
    )
    assert not list(BENCH.glob("*/__init__.py")), "no sub-packages: every study is a module"


def test_each_part_has_what_it_runs() -> None:
    import importlib

    for part in runner.PARTS.values():
        module = importlib.import_module(f"bench.{part.module}")
        assert callable(getattr(module, "main" if part.argv else "run")), part.name
        if part.argv is not None:
            assert part.argv(Path("/tmp/x"), True)[:2] == ["--out", "/tmp/x"], part.name


def test_list_names_every_part_and_what_it_needs() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--list"],
        cwd=BENCH.parent,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    lines = done.stdout.splitlines()
    assert [line.split()[0] for line in lines] == list(runner.PARTS)
    assert all(" needs " in line for line in lines)
    assert any("Docker" in line for line in lines) and any("CUDA" in line for line in lines)


def test_a_part_the_machine_cannot_run_is_skipped_with_the_reason(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lacking = dataclasses.replace(runner.PARTS["gpu_e4b"], missing=lambda: "no GPU here (test)")
    monkeypatch.setitem(runner.PARTS, "gpu_e4b", lacking)
    assert runner.main(["--only", "gpu_e4b"]) == 1, "a part named by --only that cannot run"
    out = capsys.readouterr().out
    assert "== gpu_e4b: skipped, needs a CUDA GPU" in out and "no GPU here (test)" in out


def test_unknown_parts_are_refused() -> None:
    with pytest.raises(SystemExit):
        runner.main(["--only", "http"])


def test_the_suite_cost_runs_only_when_named(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A plain ``python -m bench`` never starts the whole test suite in a clone."""
    ran: list[str] = []
    for name, part in runner.PARTS.items():
        monkeypatch.setitem(runner.PARTS, name, dataclasses.replace(part, missing=lambda: "test"))
    monkeypatch.setattr(runner, "run_part", lambda part, *a: ran.append(part.name))
    runner.main([])
    out = capsys.readouterr().out
    assert "== suite_cost" not in out and "== fidelity: skipped" in out
    assert runner.PARTS["suite_cost"].explicit and ran == []
