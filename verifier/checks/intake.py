"""Intake's rules: the opened bundle against the challenge (``bundle.*``, ``engine.*``).

The safe reader (``submission.safe_bundle``) judges the archive itself (traversal, links,
bombs, digests: the participant's ``podium submission inspect`` runs the same reader);
these judge what it holds: the bundle is for this challenge and pins its model, its
engine kind is allowed, its engine config passes the challenge's schema and rules
(``schemas.engine_config``), and its Dockerfile sets no engine knob of its own
(``submission.image_knobs``).
"""

from __future__ import annotations

from pathlib import Path

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


def unreadable(exc: BundleError) -> Finding:
    """A bundle the safe reader refused: its own id and words."""
    return Finding(exc.finding_id, "error", exc.message, hint=exc.hint, where=exc.where)


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
