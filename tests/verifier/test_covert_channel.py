"""Nothing engine-made leaves at full precision: an engine that hides held-out data in its
numbers gets no more than the stated bits out through the signed report.

``Covert`` (``tests/doubles/covert.py``) hides 27 bits of each held-out PPL record it
scores in the low bits of that record's log-probabilities, and 3 bits in its speed. A
decoder that knows the scheme reads every number of a document: on the organizer's
evidence it finds every sampled record's 27 bits (the channel is real, and the evidence
keeps what it needs), on the signed report none of them, and what it can get at all
(the speed) is inside what ``verifier.precision.engine_bits`` counts, which is at most
``NUMBER_BITS``. The report's signature still verifies, through ``podium report verify``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from doubles import carry, engine_class
from doubles.covert import BITS, COVERT_TPS, decode_nll
from doubles.sandbox import VerifyingSandbox

from podium.cli.app import main
from podium.signing import KeyPair
from schemas.challenge import load_challenge
from submission.bundle import package
from verifier.pipeline import Outcome, VerifyRequest, verify
from verifier.precision import NUMBER_BITS, engine_bits
from verifier.report import full_document
from verifier.runners.reference_engine import reference_runner

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
#: the 3-bit number the double paces its answers to say
J = 5


def _objects(doc: Any) -> list[dict[str, Any]]:
    """Every JSON object in ``doc``, itself included."""
    if isinstance(doc, dict):
        return [doc] + [x for v in doc.values() for x in _objects(v)]
    if isinstance(doc, list):
        return [x for v in doc for x in _objects(v)]
    return []


def decode(doc: dict[str, Any]) -> dict[str, Any]:
    """Everything the double's scheme can read back from ``doc``: the hidden number of
    every object that says a record's NLL per token and its token count, and the 3-bit
    number its median TPS is nearest to."""
    found = set()
    for obj in _objects(doc):
        nll, tokens = obj.get("engine_nll_per_token"), obj.get("tokens")
        if isinstance(nll, float) and isinstance(tokens, int) and tokens > 0:
            found.add(decode_nll(nll, tokens))
    tps = ((doc.get("metrics") or {}).get("tps") or {}).get("median")
    j = None
    if isinstance(tps, (int, float)):
        j = min(range(len(COVERT_TPS)), key=lambda i: abs(COVERT_TPS[i] - tps))
    return {"records": found, "j": j}


def recovered_bits(decoded: dict[str, Any], sent: set[int]) -> int:
    return BITS * len(decoded["records"] & sent) + (3 if decoded["j"] == J else 0)


@pytest.fixture(scope="module")
def covert(tmp_path_factory: pytest.TempPathFactory) -> tuple[Outcome, set[int], KeyPair]:
    tmp = tmp_path_factory.mktemp("covert")
    src = tmp / "src"
    shutil.copytree(
        REPO / "examples" / "tiny-baseline",
        src,
        ignore=shutil.ignore_patterns("manifest.json", "engine-config.json"),
    )
    carry(src / "engine")
    packaged = package(src, tmp / "dist", build=False)
    assert packaged.bundle is not None, [f.one_line() for f in packaged.findings]
    env = {"ENGINE_CLASS": engine_class("Covert"), "OMP_NUM_THREADS": "1", "COVERT_J": str(J)}
    key = KeyPair.generate()
    out = verify(
        VerifyRequest(
            packaged.bundle.path,
            load_challenge("tiny"),
            VerifyingSandbox(env=env),
            tmp / "out",
            reference=reference_runner,
            key=key,
        )
    )
    log = (tmp / "out" / "engine.log").read_text(encoding="utf-8")
    sent = {
        json.loads(line.split(" ", 1)[1])["k"]
        for line in log.splitlines()
        if line.startswith("COVERT-SENT ")
    }
    assert sent, "the double scored no held-out record"
    return out, sent, key


def test_the_evidence_keeps_every_value_so_the_channel_is_real(
    covert: tuple[Outcome, set[int], KeyPair],
) -> None:
    out, sent, _ = covert
    assert out.evidence_path is not None
    evidence = full_document(out.report_path)
    assert evidence == out.evidence and evidence["report_id"] == out.report["report_id"]
    sampled = next(c for c in evidence["checks"] if c["id"] == "ppl.reference-mismatch")
    records = sampled["details"]["records"]
    decoded = decode(evidence)
    # every sampled record gives its 27 bits back from the organizer's evidence
    assert len(decoded["records"] & sent) == len(records) >= 8, (len(records), decoded)
    assert recovered_bits(decoded, sent) >= BITS * len(records) > NUMBER_BITS


def test_the_signed_report_carries_no_more_than_the_stated_bits(
    covert: tuple[Outcome, set[int], KeyPair],
) -> None:
    out, sent, _ = covert
    report = out.report
    errors = {f["check_id"] for f in report["findings"] if f["severity"] == "error"}
    assert errors <= {"tps.unstable"}, report["findings"]  # it cheats no check
    decoded = decode(report)
    assert not decoded["records"] & sent, "a record's hidden bits reached the report"
    bits = engine_bits(report, evaluation_s=load_challenge("tiny").limits.evaluation_s)
    assert not bits.unaccounted
    assert recovered_bits(decoded, sent) <= bits.number_bits <= NUMBER_BITS, bits.to_dict()
    # aggregates only: no trial, no mean or spread at full precision
    assert report["metrics"]["tps"].keys() <= {
        "median",
        "ci95",
        "tokens_per_trial",
        "concurrency",
        "max_tokens",
        "distinct_prompts",
    }


def test_the_report_still_verifies(
    covert: tuple[Outcome, set[int], KeyPair],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out, _, key = covert
    pub = tmp_path / "organizer.pem.pub"
    pub.write_bytes(key.public_pem())
    with pytest.raises(SystemExit) as done:
        main(["report", "verify", str(out.report_path), "--pubkey", str(pub), "--json"])
    result = json.loads(capsys.readouterr().out)
    assert done.value.code == 0 and result["valid"], result
