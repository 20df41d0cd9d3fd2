"""Intake: open a bundle safely and check it against the challenge's rules.

Everything wrong is a ``Finding`` with a stable id, never a traceback: the safe reader's
``bundle.*`` findings (traversal, links, bombs, digests), then the challenge's rules,
judged in ``verifier.checks.intake``: the bundle is for this challenge, pins this
challenge's model, uses an engine kind the challenge allows, its engine config passes the
challenge's schema and rules, its Dockerfile sets no engine knob of its own
(``submission.image_knobs``: one source of truth), a ``kind = "vllm"`` entry's image is
the challenge's pinned vLLM (``verifier.vllm_image`` reads it, ``engine.not-vllm`` in
``verifier.checks.vllm_image`` judges it); and, for a runner that rebuilds, that the base
image's pin was checked or the spec confirms it (``submission.base_pin``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from podium.canonical import sha256_file
from podium.errors import BundleError
from schemas.challenge import ChallengeSpec
from schemas.findings import Finding
from schemas.manifest import Manifest
from submission.base_pin import base_findings
from submission.safe_bundle import open_bundle
from verifier.checks.intake import image_findings, rule_findings, unreadable
from verifier.checks.vllm_image import not_vllm
from verifier.vllm_image import inspect


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


def intake(bundle: Path, workdir: Path, spec: ChallengeSpec, *, rebuilds: bool = True) -> Intake:
    """``rebuilds``: the image will be built from the pinned base, so a base the spec does
    not confirm (``bundle.base-unchecked``) is refused here, before a slot is spent; a
    runner that builds no image (``process``) never reads the base."""
    bundle_sha = sha256_file(bundle)
    dest = workdir / "bundle"
    try:
        opened = open_bundle(bundle, dest, limits=spec.limits)
    except BundleError as exc:
        return Intake(bundle_sha, None, None, None, [unreadable(exc)])
    findings = list(opened.findings)
    manifest: Manifest = opened.manifest
    manifest_sha = sha256_file(opened.root_dir / "manifest.json")
    findings += rule_findings(manifest, spec)
    if rebuilds:
        findings += base_findings(manifest, spec)
    findings += image_findings(opened.root_dir, manifest, spec)
    if manifest.engine.kind == "vllm":  # what the verifier can tell of its image, judged
        findings += not_vllm(inspect(opened.root_dir, manifest, spec))
    return Intake(bundle_sha, opened.root_dir, manifest, manifest_sha, findings)
