"""The numbers of ``docs/benchmarks.md`` and ``docs/measurement.md`` are their results
files': ``python -m bench.docs --check`` passes on the committed documents, fails naming
the region where a document or a results file was changed alone, and the two ``--table``
writers of the calibration rewrite their regions through the same renderer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench import docs
from bench.common import REPO_ROOT


def _copies(tmp_path: Path) -> dict[str, Path]:
    paths = {}
    for name in docs.DOCUMENTS:
        paths[name] = tmp_path / f"{name}.md"
        shutil.copy(docs.DOCS_DIR / f"{name}.md", paths[name])
    return paths


def test_every_region_of_the_committed_docs_agrees_with_its_results() -> None:
    assert docs.check() == []


def test_every_region_is_in_its_document_once_and_every_marked_region_has_a_renderer() -> None:
    for name in docs.DOCUMENTS:
        text = (docs.DOCS_DIR / f"{name}.md").read_text(encoding="utf-8")
        marked = [line for line in text.splitlines() if line.startswith("<!-- results: ")]
        mine = [r for r in docs.regions() if r.doc == name]
        assert len(marked) == len(mine), name
        assert all(r.start() in marked for r in mine), name


def test_a_number_changed_in_a_copy_of_a_document_is_named(tmp_path: Path) -> None:
    paths = _copies(tmp_path)
    text = paths["benchmarks"].read_text(encoding="utf-8")
    start = text.index("<!-- results: views ")
    end = text.index("<!-- /results -->", start)
    region = text[start:end]
    tampered = region.replace("0.79 s", "0.69 s", 1)
    assert tampered != region
    paths["benchmarks"].write_text(text[:start] + tampered + text[end:], encoding="utf-8")
    problems = docs.check(paths)
    assert len(problems) == 1 and "'views'" in problems[0] and "benchmarks.md" in problems[0]
    assert docs.write(paths) == ["views"]
    assert paths["benchmarks"].read_text(encoding="utf-8") == text
    assert docs.check(paths) == []


def test_a_results_file_changed_alone_names_each_region_whose_text_it_moves() -> None:
    source = "bench/results/noise.json"
    data = json.loads((REPO_ROOT / source).read_text(encoding="utf-8"))
    data["within_run_cv"] = 0.5
    problems = docs.check(data={source: data})
    named = sorted(p.split("'")[1] for p in problems)
    assert named == ["missed", "noise"]
    assert set(named) < set(docs.reading(source))


def test_a_region_missing_or_unknown_is_named(tmp_path: Path) -> None:
    paths = _copies(tmp_path)
    text = paths["measurement"].read_text(encoding="utf-8")
    text = text.replace("<!-- results: window-tps ", "<!-- results: window-rate ", 1)
    paths["measurement"].write_text(text, encoding="utf-8")
    problems = docs.check(paths)
    assert any("'window-rate' has no renderer" in p for p in problems)
    assert any("'window-tps' appears 0 times" in p for p in problems)
    with pytest.raises(ValueError, match="window-tps"):
        docs.write(paths)


def test_the_calibration_table_writer_rewrites_its_regions_through_the_renderer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``python -m calibration.calibrate --table --docs FILE`` rewrites every region rendered
    from the calibration's results, in that file, and nothing else of it."""
    from calibration import calibrate

    paths = _copies(tmp_path)
    monkeypatch.setattr(docs, "DOCS_DIR", tmp_path)
    text = paths["benchmarks"].read_text(encoding="utf-8")
    stale = text.replace("the cap is 24.5750", "the cap is 24.0000", 1)
    assert stale != text
    paths["benchmarks"].write_text(stale, encoding="utf-8")
    assert calibrate.main(["--table", "--docs", str(paths["benchmarks"])]) == 0
    assert paths["benchmarks"].read_text(encoding="utf-8") == text
    assert set(docs.reading(calibrate.SOURCE)) >= {"calibration", "margins-cpu"}


def test_results_written_elsewhere_leave_the_docs_as_they_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A trial run (``--out`` another file, one row, say) never rewrites docs/benchmarks.md
    from its partial results: it says where the results went and that the docs stay."""
    from calibration import calibrate

    doc = json.loads(calibrate.RESULT.read_text(encoding="utf-8"))
    doc["rows"] = doc["rows"][:1]
    elsewhere = tmp_path / "one-row.json"
    elsewhere.write_text(json.dumps(doc), encoding="utf-8")
    before = calibrate.DOCS.read_text(encoding="utf-8")
    assert calibrate.main(["--table", "--out", str(elsewhere)]) == 0
    assert calibrate.DOCS.read_text(encoding="utf-8") == before
    assert "not rewritten" in capsys.readouterr().err


def test_the_gpu_table_writer_rewrites_its_regions_through_the_renderer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from calibration import gpu_verify

    paths = _copies(tmp_path)
    monkeypatch.setattr(docs, "DOCS_DIR", tmp_path)
    text = paths["benchmarks"].read_text(encoding="utf-8")
    start = text.index("<!-- results: gpu-rows ")
    end = text.index("<!-- /results -->", start)
    paths["benchmarks"].write_text(
        text[:start] + text[start:end].replace("| yes |", "| no |") + text[end:]
    )
    assert docs.check(paths) != []
    assert gpu_verify.main(["--table"]) == 0
    assert paths["benchmarks"].read_text(encoding="utf-8") == text
    assert docs.check(paths) == []
