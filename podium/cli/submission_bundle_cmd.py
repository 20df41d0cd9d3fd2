"""``podium submission package``, ``inspect`` and ``selfcheck``: a submission as a bundle.

``package`` writes the bundle (and builds its image), ``inspect`` opens one as the
verifier's intake does, ``selfcheck`` runs the organizers' pipeline on it (the public
prompts, never signed). Mounted by ``submission_cmd``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from podium.cli.findings_view import finish
from podium.cli.options import (
    BaseDigestOpt,
    ChallengeOpt,
    DetailsOpt,
    EntryArg,
    JsonOpt,
    LocalRunner,
    LocalRunnerOpt,
    LogsOpt,
    bundle_challenge,
    given_challenge,
    out_option,
    resolve_challenge,
)
from podium.cli.output import console, json_mode, quoted, set_json
from podium.cli.verification import run_verification
from podium.errors import UsageError
from schemas.findings import errors_in


def package_cmd(
    directory: EntryArg,
    out: Annotated[Path, out_option("Folder for the bundle and its image record")] = Path("dist"),
    challenge: ChallengeOpt = None,
    base_digest: BaseDigestOpt = None,
    no_build: Annotated[bool, typer.Option("--no-build", help="Write the bundle only.")] = False,
    logs: LogsOpt = False,
    force: Annotated[
        bool, typer.Option("--force", help="Replace a bundle another directory packaged.")
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Freeze DIR, write OUT/TEAM-ENTRY.tar.gz (deterministic) + .sha256, build the image.

    The image is built from the bundle as the verifier will open it and tagged
    podium-submission/TEAM-ENTRY:DIGEST12; OUT/TEAM-ENTRY.image.json records it and
    OUT/TEAM-ENTRY.build.log keeps the build log (--logs shows it as it runs).

    Examples:

      podium submission package my-entry -o dist

      SOURCE_DATE_EPOCH=1767225600 podium submission package my-entry -o dist --no-build --json
    """
    from podium.cli.progress import BuildProgress
    from submission.bundle import package

    set_json(json_out)
    progress = BuildProgress(console(stderr=True), show_logs=logs and not json_mode())
    with progress:
        result = package(
            directory,
            out,
            challenge=given_challenge(challenge),
            base_digest=base_digest,
            build=not no_build,
            on_log=progress.line,
            force=force,
        )
    line = f"packaged {directory}"
    if result.bundle:
        line += (
            f"\n   bundle {result.bundle.path} ({result.bundle.size:,} bytes, "
            f"sha256 {result.bundle.sha256[:16]}...)"
        )
    if result.bundle:
        line += _base_line(directory)
    if result.image:
        line += (
            f"\n   image  {result.image['tag']} ({result.image['image_id'][:19]}, "
            f"built in {result.image['build_seconds']:.1f} s; log {result.build_log})"
        )
    bundle = quoted(result.bundle.path) if result.bundle else "BUNDLE"
    finish(
        result.to_dict(),
        result.findings,
        line,
        f"podium submission selfcheck {bundle}, then hand the bundle to the organizers, "
        f"e.g. podium submission push {bundle} --repo ORG/NAME",
    )


def _base_line(directory: Path) -> str:
    """The base pin as frozen, and what an unchecked one means for the doors after."""
    import json

    base = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))["engine"]
    base = base["base_image"]
    shown = f"{base['ref'].split('@')[0]}@{base['digest'][:19]}..."
    if not base.get("unchecked"):
        return f"\n   base   {shown} (checked: a local image holds it)"
    return (
        f"\n   base   {shown} (unchecked: no local image holds it; inspect, queue submit "
        "and the verifier refuse it unless the challenge spec confirms that digest)"
    )


def inspect_cmd(
    bundle: Annotated[Path, typer.Argument(help="A bundle .tar.gz.")],
    challenge: ChallengeOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Open a bundle exactly as the verifier's intake does, and report what it finds.

    The bundle is checked against the challenge's rules: --challenge when given, else the
    one its manifest names. Its base image is shown checked (a local image confirmed the
    digest at freeze) or unchecked; an unchecked base the challenge spec does not confirm,
    or an all-zero digest, is refused (bundle.base-unchecked).

    Examples:

      podium submission inspect dist/acme-mtp-7.tar.gz

      podium submission inspect dist/acme-mtp-7.tar.gz --challenge fast-gemma --json
    """
    import tempfile

    from submission.safe_bundle import open_bundle, remove_opened

    set_json(json_out)
    spec = resolve_challenge(challenge, None if challenge else bundle_challenge(bundle))
    from submission.base_pin import base_findings
    from verifier.checks.intake import rule_findings

    with tempfile.TemporaryDirectory(prefix="podium-inspect-") as tmp:
        opened = open_bundle(bundle, Path(tmp), limits=spec.limits)
        m = opened.manifest
        findings = [*opened.findings, *rule_findings(m, spec), *base_findings(m, spec)]
        base = m.engine.base_image
        data = {
            "bundle": str(bundle),
            "sha256": opened.sha256,
            "size": opened.size,
            "ok": not errors_in(findings),
            "challenge": spec.id,
            "bundle_challenge": m.challenge.id,
            "team": m.team,
            "entry": m.entry,
            "engine": m.engine.kind,
            "files": len(m.files),
            "base_image": base.to_dict(),
            "findings": [f.to_dict() for f in findings],
        }
        remove_opened(opened)
    checked = "unchecked" if base.unchecked else "checked"
    finish(
        data,
        findings,
        f"{bundle}: {m.team}/{m.entry}, {m.engine.kind} engine, {len(m.files)} files, "
        f"base {base.ref.split('@')[0]}@{base.digest[:19]}... ({checked}), "
        f"within the {spec.id} challenge's rules",
        f"podium submission selfcheck {quoted(bundle)}",
    )


def selfcheck_cmd(
    source: Annotated[Path, typer.Argument(help="A submission directory or a bundle (.tar.gz).")],
    challenge: ChallengeOpt = None,
    runner: LocalRunnerOpt = LocalRunner.local_docker,
    out: Annotated[Path, out_option("Folder for the bundle and the report")] = Path(
        "out/selfcheck"
    ),
    logs: LogsOpt = False,
    details: DetailsOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Run the organizers' pipeline on the public prompts: the numbers you will be held to.

    Results are SELF-REPORTED, never VERIFIED, and never signed. A directory is packaged
    first (no image build: the pipeline rebuilds it exactly as the verifier will).

    Examples:

      podium submission selfcheck examples/tiny-baseline

      podium submission selfcheck out/podium-tiny-baseline.tar.gz --runner process --json
    """
    from podium.extras import SELFCHECK_MODULES, require_installed
    from submission.bundle import package

    set_json(json_out)
    require_installed("selfcheck", SELFCHECK_MODULES, extra="engine")
    if runner is LocalRunner.local_docker:
        require_installed("selfcheck in Docker", ("docker",), extra="docker")
    if not source.exists():
        raise UsageError(
            f"no such directory or bundle: {source}",
            hint="pass a submission directory (podium submission init DIR writes one) or a "
            "bundle .tar.gz",
            where=str(source),
        )
    bundle = source
    if source.is_dir():
        packaged = package(
            source, out, challenge=given_challenge(challenge), build=False, force=True
        )
        if errors_in(packaged.findings) or packaged.bundle is None:
            finish(packaged.to_dict(), packaged.findings, "")
        assert packaged.bundle is not None
        bundle = packaged.bundle.path
    raise typer.Exit(
        run_verification(
            bundle,
            challenge=challenge,
            runner=runner.value,
            out=out,
            reported_tps=None,
            heldout=None,
            key=None,
            publish=None,
            self_check=True,
            logs=logs,
            source=source,
            details=details,
        )
    )
