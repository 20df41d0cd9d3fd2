"""``submission.network-step``: validate warns of a RUN step that would fetch, naming its
line and what to vendor; the scaffold's own vendoring lines pass."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from schemas.challenge import load_challenge
from submission.network_steps import network_step_findings
from submission.scaffold import init_submission
from submission.validate import validate_submission

REPO = Path(__file__).resolve().parents[2]

FETCHING = """\
ARG BASE_IMAGE=podium/engine-base:bookworm
FROM ${BASE_IMAGE}
RUN pip install requests==2.32.3
RUN curl -fsSL -o /tmp/x.py https://example.org/x.py
RUN git clone https://example.org/repo.git /src
RUN apt-get update && apt-get install -y jq
RUN python3 -c "import urllib.request; urllib.request.urlopen('http://10.0.0.1/x')"
RUN echo offline && python3 -m pip install --no-index --find-links /w \\
        -r /w/requirements.txt
"""


@pytest.mark.fires("submission.network-step")
def test_each_step_that_fetches_is_named_with_its_line_and_what_to_vendor() -> None:
    found = network_step_findings(FETCHING)
    assert [f.where for f in found] == [f"Dockerfile:{n}" for n in (3, 4, 5, 6, 7)]
    assert all(f.severity == "warning" for f in found)
    assert "--no-index --find-links wheels/" in (found[0].hint or "")
    assert "https://example.org/x.py" in (found[1].hint or "")
    assert "dpkg -i" in (found[3].hint or "")


@pytest.mark.fires("submission.network-step")
def test_validate_warns_of_a_fetching_step_in_the_entry(tmp_path: Path) -> None:
    entry = tmp_path / "entry"
    init_submission(entry, load_challenge("tiny"), team="acme", entry="e1")
    dockerfile = entry / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + "RUN pip install requests==2.32.3\n")
    result = validate_submission(entry)
    assert result.ok  # a warning: the build is the judge
    (found,) = [f for f in result.findings if f.check_id == "submission.network-step"]
    assert "RUN pip install requests==2.32.3" in found.message


@pytest.mark.quiet("submission.network-step")
def test_the_scaffolds_vendoring_lines_and_the_examples_pass(tmp_path: Path) -> None:
    entry = tmp_path / "entry"
    init_submission(entry, load_challenge("tiny"), team="acme", entry="e1")
    dockerfile = entry / "Dockerfile"
    text = dockerfile.read_text()
    assert network_step_findings(text) == []
    # uncomment the scaffold's own COPY/RUN vendoring lines: still no fetch
    text = re.sub(r"^# (COPY wheels/|RUN python3 -m pip|        -r )", r"\1", text, flags=re.M)
    assert "\nRUN python3 -m pip install --no-index" in text
    assert network_step_findings(text) == []
    for example in ("tiny-baseline", "tiny-vllm", "fast-gemma-winning"):
        text = (REPO / "examples" / example / "Dockerfile").read_text()
        assert network_step_findings(text) == [], example
