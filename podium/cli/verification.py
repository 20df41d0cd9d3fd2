"""One verification, for ``podium verify`` and ``podium submission selfcheck``.

``run_verification`` makes the pipeline's request from the options, runs it (drawn live
for a person, silent with ``--json``), publishes a signed result when asked, and prints
the one report rendering with the next step; it returns the verdict's exit code. It is
the CLI's and not the verifier's: it wires the pipeline to the leaderboard (publishing)
and to the console.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from podium.cli.options import (
    RunnerKind,
    bundle_challenge,
    require_bundle,
    require_heldout,
    resolve_challenge,
)
from podium.cli.output import console, emit, json_mode
from podium.cli.render import Signature, render_report
from podium.errors import EXIT_CANNOT_EVALUATE, EXIT_FINDINGS, EXIT_OK, UsageError
from podium.signing import KeyPair
from podium.untrusted import markup

if TYPE_CHECKING:
    from verifier.pipeline import Outcome, VerifyRequest


def quiet_library_bars() -> None:
    """No progress bar of a library in the middle of podium's own output: transformers
    draws one while the reference loads its weights (it reads the Hub library's switch when
    it is imported, and its own after), and the verification shows its own progress."""
    import sys

    from huggingface_hub.utils import disable_progress_bars

    disable_progress_bars()
    if "transformers" in sys.modules:
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()


def exit_code(verdict: str) -> int:
    return {"VERIFIED": EXIT_OK, "UNOFFICIAL": EXIT_OK, "REJECTED": EXIT_FINDINGS}.get(
        verdict, EXIT_CANNOT_EVALUATE
    )


def refuse_secrets_unsandboxed(
    runner: RunnerKind | str, *, key: Path | None, publish: str | None, heldout: str | None
) -> str | None:
    """Why ``runner`` has no sandbox (None when it has one). A run with no sandbox is
    refused ``--key``, ``--publish`` and ``--heldout`` before any key is read."""
    from verifier.runners.factory import runner_info

    denied = runner_info(RunnerKind(runner).value).unsandboxed()
    if denied and (key is not None or publish or heldout):
        given = "--key" if key is not None else "--publish" if publish else "--heldout"
        raise UsageError(
            f"{denied}: {given} is refused, and no key was read",
            hint="verify with --runner local-docker to sign, or drop " + given,
        )
    return denied


def run_verification(
    bundle: Path,
    *,
    challenge: str | None,
    runner: RunnerKind | str,
    out: Path,
    reported_tps: float | None,
    heldout: str | None,
    key: KeyPair | None,
    publish: str | None,
    self_check: bool,
    logs: bool,
    source: Path | None = None,
    details: bool = False,
    key_path: Path | None = None,
    hold: bool = True,
) -> int:
    """Run the pipeline on ``bundle`` and print the one report rendering; the exit code.

    ``source`` is the directory a self-check packaged the bundle from (for the next step);
    ``details`` prints every metric and check, not only what a participant reads first;
    ``key_path`` is the signing key's file, when it came from one (for the next step).
    """
    quiet_library_bars()
    from verifier.pipeline import VerifyRequest
    from verifier.runners.factory import make_runner, reference_runner

    require_bundle(bundle)
    require_heldout(heldout)
    if publish and key is None:
        raise UsageError(
            "--publish needs a signing key",
            hint="pass --key KEYFILE or set $PODIUM_SIGNING_KEY (podium keys generate KEYFILE)",
        )
    spec = resolve_challenge(challenge, bundle_challenge(bundle))
    engine_runner = make_runner(RunnerKind(runner).value)
    denied = engine_runner.info.unsandboxed()
    req = VerifyRequest(
        bundle=bundle,
        spec=spec,
        runner=engine_runner,
        out_dir=out,
        reported_tps=reported_tps,
        heldout=heldout,
        key=key,
        self_check=self_check,
        reference=reference_runner,
    )
    outcome = _verify(req, RunnerKind(runner).value, denied, logs=logs)
    result: dict[str, Any] = {
        "verdict": outcome.verdict,
        "report": str(outcome.report_path),
        "evidence": str(outcome.evidence_path) if outcome.evidence_path else None,
        "signed": outcome.signed,
        "published": None,
        "unsandboxed": denied,
    }
    if publish:
        result["published"] = _publish(outcome, key, publish, hold=hold)
    sig = _signature(outcome, key, self_check=self_check, denied=denied)
    step = _next_step(
        outcome, result, self_check=self_check, source=source, paths=(bundle, key_path)
    )

    def human(con: Console) -> None:
        _print_outcome(con, outcome, sig, getattr(spec.tps, "max_cv", None), details=details)
        _print_published(con, result.get("published"))
        con.print(f"next: {markup(step)}")

    emit({**result, "report_document": outcome.report}, human)
    return exit_code(outcome.verdict)


def _print_outcome(
    con: Console, outcome: Outcome, sig: Signature, max_cv: float | None, *, details: bool
) -> None:
    """The report, then where it and the organizer's evidence lie."""
    more = (
        f"every metric and check: podium report show "
        f"{shlex.quote(str(outcome.report_path))} --details (or --json)"
    )
    render_report(con, outcome.report, sig, max_cv=max_cv, details=details, more=more)
    con.print(f"report: {markup(outcome.report_path)}")
    if outcome.evidence_path is not None:
        con.print(
            f"evidence: {markup(outcome.evidence_path)} (the organizer's: every value in "
            "full, never to be published)",
            style="dim",
        )


def _verify(req: VerifyRequest, runner: str, denied: str | None, *, logs: bool) -> Outcome:
    """The pipeline, drawn live for a person (its stages, what this run is not)."""
    from verifier.pipeline import verify

    if json_mode():
        return verify(req)
    from podium.cli.progress import RichEvents

    con, spec = console(), req.spec
    if denied:  # the first line: what this run is not
        con.print(f"[yellow]{markup(denied)}[/]")
    public = req.self_check or denied
    what = "self-check on the public prompts" if public else "blind, held-out set"
    con.print(
        f"verifying {markup(req.bundle)} against {spec.id} {spec.version} ({what}; runner {runner})"
    )
    with RichEvents(con, show_logs=logs) as events:
        return verify(req, events)


def _signature(
    outcome: Any, key: KeyPair | None, *, self_check: bool, denied: str | None
) -> Signature:
    """Who signed the report, or why nobody did."""
    if outcome.signed:
        return Signature("signed", key_id=key.key_id if key else None)
    if self_check:
        return Signature("unsigned", unsigned_because="self-checks are never signed")
    if denied:
        return Signature("unsigned", unsigned_because="a run with no sandbox is never signed")
    return Signature("unsigned", unsigned_because="no --key given (nor $PODIUM_SIGNING_KEY)")


def _next_step(
    outcome: Any,
    result: dict[str, Any],
    *,
    self_check: bool,
    source: Path | None,
    paths: tuple[Path, Path | None],
) -> str:
    """The next command, with the paths this run knows (the bundle, the key's file) in it;
    a placeholder only for what it cannot know (the store a report goes to)."""
    bundle, key_path = paths
    report = shlex.quote(str(outcome.report_path))
    key = shlex.quote(str(key_path)) if key_path else "KEYFILE"
    pub = key_path.with_name(key_path.name + ".pub") if key_path else None
    pubkey = shlex.quote(str(pub)) if pub and pub.is_file() else "KEYFILE.pub"
    if outcome.verdict == "FAILED":
        log = outcome.report.get("organizer_log")
        where = (
            f" and the engine's own output in {shlex.quote(str(outcome.report_path.parent / log))}"
            if log
            else ""
        )
        return f"read the failure above{where}; rerun with --logs to see the image build"
    if self_check:
        where = shlex.quote(str(source)) if source else "DIR"
        if outcome.verdict == "REJECTED":
            return f"fix the findings above, then run `podium submission validate {where}`"
        # a directory is packaged again with its image (package names the bundle it writes);
        # a bundle self-checked as it is goes as it is
        from_dir = source is not None and source.is_dir()
        step = f"package it (`podium submission package {where}`) and " if from_dir else ""
        named = "BUNDLE" if from_dir else shlex.quote(str(bundle))
        return (
            f"{step}hand the bundle to the organizers, e.g. "
            f"`podium submission push {named} --repo ORG/NAME`"
        )
    if result.get("unsandboxed"):
        return (
            "for a blind, signed result verify it in a sandbox: --runner local-docker --key KEYFILE"
        )
    published = result.get("published") or {}
    if published.get("ok"):
        store = shlex.quote(str(published.get("store")))
        return f"podium leaderboard show --store {store} --pubkey {pubkey}"
    if not outcome.signed:
        return "sign it: rerun with --key KEYFILE (create one with `podium keys generate KEYFILE`)"
    return f"podium leaderboard publish {report} --key {key} --store STORE"


def _publish(
    outcome: Any, keypair: KeyPair | None, store_url: str, *, hold: bool = True
) -> dict[str, Any]:
    from leaderboard.publish import publish_reports
    from leaderboard.stores import open_store
    from podium.errors import PodiumError
    from verifier.scale.queue.hold import Hold

    assert keypair is not None
    if outcome.verdict == "FAILED" or not outcome.signed:
        return {"ok": False, "reason": "only complete, signed reports are published"}
    # the run's length shows no finer than the report's finished (verifier.scale.queue.hold)
    if hold:
        Hold().until(outcome.report)
    try:
        published = publish_reports([outcome.report], open_store(store_url), keypair)
    except PodiumError as exc:
        return {
            "ok": False,
            "reason": str(exc),
            "retry": f"podium leaderboard publish {outcome.report_path} --store {store_url} "
            "--key KEYFILE",
        }
    return {"ok": True, **published.to_dict()}


def _print_published(con: Console, pub: dict[str, Any] | None) -> None:
    if not pub:
        return
    if pub.get("ok"):
        added, present = len(pub.get("added") or []), len(pub.get("already_present") or [])
        con.print(f"published to {markup(pub['store'])} ({added} added, {present} already there)")
        return
    con.print(f"[red]not published:[/] {markup(pub['reason'])}")
    if pub.get("retry"):
        con.print(f"retry with: {markup(pub['retry'])}")
