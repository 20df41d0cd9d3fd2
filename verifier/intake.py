"""Intake: open a bundle safely and check it against the challenge's rules.

Everything wrong is a ``Finding`` with a stable id, never a traceback: the safe reader's
``bundle.*`` findings (traversal, links, bombs, digests), then the rules: the bundle is
for this challenge, pins this challenge's model, uses an engine kind the challenge
allows, its engine config passes the challenge's schema and rules, and its Dockerfile
sets no engine knob of its own (``submission.image_knobs``: one source of truth).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from podium.canonical import sha256_file
from podium.errors import BundleError
from schemas.challenge import ChallengeSpec
from schemas.check_ids import (
    BUNDLE_CHALLENGE_MISMATCH,
    BUNDLE_CHALLENGE_VERSION,
    BUNDLE_MODEL_PIN,
    ENGINE_KIND_NOT_ALLOWED,
)
from schemas.engine_config import check_engine_config
from schemas.findings import Finding
from schemas.manifest import Manifest
from submission.image_knobs import image_knob_findings
from submission.safe_bundle import open_bundle


@dataclass
class Intake:
    """Intake's one result: read once, handed to the runner, the checks and the report."""

    bundle_sha256: str
    root: Path | None
    manifest: Manifest | None
    manifest_sha256: str | None
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.root is not None and not any(f.is_error for f in self.findings)


def rule_findings(manifest: Manifest, spec: ChallengeSpec) -> list[Finding]:
    out: list[Finding] = []
    if manifest.challenge.id != spec.id:
        out.append(
            Finding(
                BUNDLE_CHALLENGE_MISMATCH,
                "error",
                f"the bundle is for challenge {manifest.challenge.id!r}, not {spec.id!r}",
                hint=f"package it with --challenge {spec.id}",
            )
        )
    elif manifest.challenge.version != spec.version:
        out.append(
            Finding(
                BUNDLE_CHALLENGE_VERSION,
                "warning",
                f"the bundle was frozen for {spec.id} {manifest.challenge.version}; "
                f"verifying under {spec.version}",
            )
        )
    if manifest.engine.kind not in spec.engine.kinds:
        out.append(
            Finding(
                ENGINE_KIND_NOT_ALLOWED,
                "error",
                f"engine kind {manifest.engine.kind!r} is not allowed by {spec.id} "
                f"(allowed: {', '.join(spec.engine.kinds)})",
            )
        )
    pin = manifest.model
    if (pin.repo_id, pin.revision) != (spec.model.repo_id, spec.model.revision):
        out.append(
            Finding(
                BUNDLE_MODEL_PIN,
                "error",
                f"the bundle pins {pin.repo_id}@{pin.revision[:12]}, the challenge "
                f"{spec.model.repo_id}@{spec.model.revision[:12]}",
                hint="freeze the submission again against this challenge",
            )
        )
    out += check_engine_config(manifest.engine.config, spec, file="manifest.json:engine.config")
    return out


def image_findings(root: Path, manifest: Manifest, spec: ChallengeSpec) -> list[Finding]:
    """The bundle's Dockerfile against its frozen config (``submission.image_knobs``)."""
    path = root / manifest.engine.dockerfile
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []  # a bundle without its Dockerfile fails at rebuild, naming it
    return image_knob_findings(
        text,
        manifest.engine.config,
        spec,
        file=manifest.engine.dockerfile,
        config_where=lambda key: f"manifest.json:engine.config.{key}",
    )


def intake(bundle: Path, workdir: Path, spec: ChallengeSpec) -> Intake:
    bundle_sha = sha256_file(bundle)
    dest = workdir / "bundle"
    try:
        opened = open_bundle(bundle, dest, limits=spec.limits)
    except BundleError as exc:
        finding = Finding(exc.finding_id, "error", exc.message, hint=exc.hint, where=exc.where)
        return Intake(bundle_sha, None, None, None, [finding])
    findings = list(opened.findings)
    manifest: Manifest = opened.manifest
    manifest_sha = sha256_file(opened.root_dir / "manifest.json")
    findings += rule_findings(manifest, spec)
    findings += image_findings(opened.root_dir, manifest, spec)
    return Intake(bundle_sha, opened.root_dir, manifest, manifest_sha, findings)
