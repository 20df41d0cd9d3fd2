"""``podium queue`` end to end on a folder: submit, list, show, cancel, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def podium(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "podium.cli.app", *args], capture_output=True, text=True
    )


def test_queue_commands_on_a_folder(tmp_path: Path, sample_bundle: Path) -> None:
    q = str(tmp_path / "queue")
    sub = podium(
        "queue", "submit", str(sample_bundle), "--queue", q, "--reported-tps", "42", "--json"
    )
    assert sub.returncode == 0, sub.stderr
    (req,) = json.loads(sub.stdout)["requests"]
    assert req["state"] == "PENDING"
    listed = json.loads(podium("queue", "list", "--queue", q, "--json").stdout)["requests"]
    assert [r["request_id"] for r in listed] == [req["request_id"]]
    shown = json.loads(
        podium("queue", "show", req["request_id"][:8], "--queue", q, "--json").stdout
    )
    assert shown["reported_tps"] == 42 and shown["history"][0]["note"] == "submitted"
    assert podium("queue", "cancel", req["request_id"], "--queue", q).returncode == 0
    again = podium("queue", "cancel", req["request_id"], "--queue", q)
    assert again.returncode == 2 and "already CANCELLED" in again.stderr
    missing = podium("queue", "show", "ffff", "--queue", q)
    assert missing.returncode == 2


def test_verify_accepts_the_hf_jobs_runner_and_says_where_it_runs(sample_bundle: Path) -> None:
    out = podium("verify", str(sample_bundle), "--runner", "hf-jobs")
    assert out.returncode == 2 and "podium dispatch" in out.stderr
