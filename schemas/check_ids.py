"""Every check id podium can emit, declared once: its phase, severity, effect and meaning.

Reports, records, tests and users match on these ids, so an id never changes meaning
once released. Each is declared here and nowhere else; code that emits a finding or a
check result names it through the constants below, and ``docs/measurement.md`` is
tested against this table. Each is judged in one place: every id of a verifier phase in
``verifier/checks/``; the ``submission`` phase's, and the bundle reader's ``bundle.*``
(which intake reuses), by the participant's own ``submission`` package
(``tests/test_structure.py``).

- ``phase``: where the id is emitted: ``submission`` (the participant's own
  ``podium submission validate / package``, before any bundle exists), then the
  verifier's pipeline (``intake``, ``environment``,
  ``rebuild``, ``evaluation`` while the participant's engine runs, ``reference`` after it
  has stopped and the verifier's own model judges what it did, ``verdict``).
- ``severity``: the severity of the finding the id raises (``error`` or ``warning``).
- ``effect``: what that finding does to the verdict: ``REJECTED`` (a rule broken),
  ``FAILED`` (the run could not be evaluated reliably), ``UNOFFICIAL`` (nothing broken,
  but never VERIFIED) or ``none`` (information only).
- ``check``: the id is also reported as a check result (pass / fail / skip / error), and
  a challenge may require it to pass for VERIFIED.

Ids of a challenge's own forbidden-setting rules (``engine.precache`` ...) are data in
the challenge spec; ``rule_id`` tells them apart from the ids declared here.
"""

from __future__ import annotations

from dataclasses import dataclass

PHASES = ("submission", "intake", "environment", "rebuild", "evaluation", "reference", "verdict")
EFFECTS = ("REJECTED", "FAILED", "UNOFFICIAL", "none")


@dataclass(frozen=True)
class CheckId:
    id: str
    phase: str
    severity: str
    effect: str
    doc: str
    check: bool = False

    def __post_init__(self) -> None:
        if self.phase not in PHASES:
            raise ValueError(f"{self.id}: unknown phase {self.phase!r}")
        if self.effect not in EFFECTS:
            raise ValueError(f"{self.id}: unknown effect {self.effect!r}")
        if self.severity not in ("error", "warning"):
            raise ValueError(f"{self.id}: unknown severity {self.severity!r}")


CATALOG: dict[str, CheckId] = {}


def _declare(
    id: str, phase: str, doc: str, *, severity: str = "error", effect: str = "", check: bool = False
) -> str:
    if id in CATALOG:
        raise ValueError(f"check id {id!r} declared twice")
    if not effect:
        effect = "REJECTED" if severity == "error" else "none"
    CATALOG[id] = CheckId(id, phase, severity, effect, doc, check)
    return id


# -- intake: the bundle, opened safely, and the challenge's rules ------------------------
BUNDLE_NOT_GZIP = _declare("bundle.not-gzip", "intake", "the bundle is not a gzip file")
BUNDLE_CORRUPT = _declare(
    "bundle.corrupt", "intake", "the archive cannot be read to its end (truncated, damaged)"
)
BUNDLE_TOO_LARGE = _declare(
    "bundle.too-large",
    "intake",
    "the bundle, or its unpacked content, is over the challenge's size limit (bombs included)",
)
BUNDLE_TOO_MANY_FILES = _declare(
    "bundle.too-many-files", "intake", "more members than the challenge's file-count limit"
)
BUNDLE_PATH_TRAVERSAL = _declare(
    "bundle.path-traversal", "intake", "a member's path climbs out of the bundle (`..`)"
)
BUNDLE_ABSOLUTE_PATH = _declare("bundle.absolute-path", "intake", "a member's path is absolute")
BUNDLE_LINK = _declare("bundle.link", "intake", "a member is a symbolic or hard link")
BUNDLE_SPECIAL_FILE = _declare(
    "bundle.special-file", "intake", "a member is a device, FIFO or other special file"
)
BUNDLE_DUPLICATE_NAME = _declare(
    "bundle.duplicate-name", "intake", "two members have the same name"
)
BUNDLE_MANIFEST_MISSING = _declare(
    "bundle.manifest-missing", "intake", "the bundle does not start with manifest.json"
)
BUNDLE_MANIFEST_INVALID = _declare(
    "bundle.manifest-invalid", "intake", "manifest.json is not valid JSON or breaks its schema"
)
BUNDLE_DIGEST_MISMATCH = _declare(
    "bundle.digest-mismatch", "intake", "a file's sha256 or size differs from the manifest"
)
BUNDLE_MISSING_FILE = _declare(
    "bundle.missing-file", "intake", "a file the manifest lists is not in the bundle"
)
BUNDLE_UNLISTED_FILE = _declare(
    "bundle.unlisted-file", "intake", "the bundle holds a file the manifest does not list"
)
BUNDLE_CONFIG_MISMATCH = _declare(
    "bundle.config-mismatch",
    "intake",
    "the bundle's engine-config.json differs from the config frozen in the manifest",
)
BUNDLE_CHALLENGE_MISMATCH = _declare(
    "bundle.challenge-mismatch", "intake", "the bundle was frozen for another challenge"
)
BUNDLE_CHALLENGE_VERSION = _declare(
    "bundle.challenge-version",
    "intake",
    "the bundle was frozen for another version of this challenge",
    severity="warning",
)
BUNDLE_BASE_UNCHECKED = _declare(
    "bundle.base-unchecked",
    "intake",
    "the base image's digest is all zeros, or no local image confirmed it at freeze and the "
    "challenge spec does not confirm it: the rebuild could not start",
)
BUNDLE_MODEL_PIN = _declare(
    "bundle.model-pin", "intake", "the bundle pins another model or revision than the challenge"
)
ENGINE_KIND_NOT_ALLOWED = _declare(
    "engine.kind-not-allowed", "intake", "the challenge does not allow this engine kind"
)
ENGINE_IMAGE_KNOB = _declare(
    "engine.image-knob",
    "intake",
    "the Dockerfile sets an engine knob (ENV or CMD argument) the frozen config does not hold, "
    "holds otherwise, or the challenge forbids",
)
ENGINE_NOT_VLLM = _declare(
    "engine.not-vllm",
    "intake",
    'a kind = "vllm" entry whose image is not the pinned vLLM: another base, or a command '
    "that starts neither podium's launcher nor vLLM's server",
)
CONFIG_SCHEMA = _declare(
    "config.schema", "intake", "a knob of the engine config breaks its type or bounds"
)
CONFIG_KNOB_NOT_ALLOWED = _declare(
    "config.knob-not-allowed", "intake", "a knob the challenge's allow-list does not name"
)
CONFIG_KNOB_NAME = _declare(
    "config.knob-name", "intake", "a key of the engine config is not an UPPER_CASE knob name"
)
CONFIG_UNKNOWN_KNOB = _declare(
    "config.unknown-knob",
    "intake",
    "an UPPER_CASE key one typo away from a known knob (passed on as it is)",
    severity="warning",
)
CONFIG_MEMBER = _declare(
    "config.member",
    "intake",
    "a member of an object knob (SPECULATIVE_CONFIG, HF_OVERRIDES, ...) that the pinned vLLM "
    "release's config class does not have or types otherwise, or an unknown member the "
    "challenge does not open",
)
CONFIG_MEMBERS_UNPINNED = _declare(
    "config.members-unpinned",
    "intake",
    "the challenge pins another vLLM release than the one the knob members are typed for, so "
    "the members are not checked",
    severity="warning",
)

# -- submission: the participant's own checks, before a bundle exists --------------------
CONFIG_NO_SUCH_KNOB = _declare(
    "config.no-such-knob",
    "submission",
    "a key of [engine.config] that is no knob the entry's engine kind (vllm, baseline) reads",
)
ENGINE_KNOB_IGNORED = _declare(
    "engine.knob-ignored",
    "submission",
    "a knob the chosen engine never reads (a vLLM knob on a baseline entry)",
    severity="warning",
)
SUBMISSION_GENERATED_FILE = _declare(
    "submission.generated-file",
    "submission",
    "an engine-config.json in the directory that matches podium.toml: it is never used",
    severity="warning",
)
SUBMISSION_MISSING_CONFIG = _declare(
    "submission.missing-config", "submission", "the directory has no podium.toml"
)
SUBMISSION_CONFIG_PARSE = _declare(
    "submission.config-parse", "submission", "podium.toml is not valid TOML"
)
SUBMISSION_CONFIG_SCHEMA = _declare(
    "submission.config-schema", "submission", "podium.toml breaks its schema"
)
SUBMISSION_UNKNOWN_CHALLENGE = _declare(
    "submission.unknown-challenge", "submission", "podium.toml names no known challenge"
)
SUBMISSION_NAME = _declare(
    "submission.name", "submission", "a team or entry name that is not a valid name"
)
SUBMISSION_MODEL_PIN = _declare(
    "submission.model-pin", "submission", "the model pin is not the challenge's"
)
SUBMISSION_SERVED_MODEL_NAME = _declare(
    "submission.served-model-name",
    "submission",
    "SERVED_MODEL_NAME differs from the entry's served_model_name",
)
SUBMISSION_MISSING_DOCKERFILE = _declare(
    "submission.missing-dockerfile", "submission", "the Dockerfile the entry names is missing"
)
SUBMISSION_DOCKERFILE_BASE = _declare(
    "submission.dockerfile-base",
    "submission",
    "the Dockerfile does not build FROM ${BASE_IMAGE}, so the base cannot be pinned",
)
SUBMISSION_NETWORK_STEP = _declare(
    "submission.network-step",
    "submission",
    "a Dockerfile RUN step fetches from the network (pip without --no-index, curl, git, apt, "
    "a URL), which builds do not have",
    severity="warning",
)
SUBMISSION_REQUIREMENTS = _declare(
    "submission.requirements", "submission", "a requirements line is not NAME==VERSION[ --hash]"
)
SUBMISSION_SYMLINK_OUTSIDE = _declare(
    "submission.symlink-outside", "submission", "a link that leaves the directory, or dangles"
)
SUBMISSION_SYMLINK_DIR = _declare("submission.symlink-dir", "submission", "a link to a directory")
SUBMISSION_SPECIAL_FILE = _declare(
    "submission.special-file", "submission", "a device, socket or FIFO in the directory"
)
SUBMISSION_TOO_MANY_FILES = _declare(
    "submission.too-many-files", "submission", "more files than the challenge allows"
)
SUBMISSION_TOO_LARGE = _declare(
    "submission.too-large", "submission", "more bytes than the challenge allows"
)
SUBMISSION_ORIGIN_MISSING = _declare(
    "submission.origin-missing",
    "submission",
    "an imported entry's original manifest is missing",
)
SUBMISSION_CONFIG_EDITED = _declare(
    "submission.config-edited",
    "submission",
    "an engine-config.json in the directory that differs from podium.toml: edits there "
    "would be lost",
)

# -- environment and rebuild -------------------------------------------------------------
ENV_HARDWARE = _declare(
    "env.hardware",
    "environment",
    "the machine is not the challenge's hardware (exact GPU name and count)",
    severity="warning",
    effect="UNOFFICIAL",
)
ENV_GPU_BUSY = _declare(
    "env.gpu-busy",
    "environment",
    "another process holds the GPU: the machine is not clean",
    effect="FAILED",
)
IMAGE_TOO_LARGE = _declare(
    "image.too-large", "rebuild", "the rebuilt image is over the challenge's size limit"
)
IMAGE_NETWORK = _declare(
    "image.network",
    "rebuild",
    "a build step reached for the network, which the rebuild does not have: the image must "
    "follow from the bundle and its pinned base alone",
)

# -- evaluation: what the participant's engine answered -----------------------------------
PPL_LOGPROB_POSITIVE = _declare(
    "ppl.logprob-positive",
    "evaluation",
    "a returned logprob is above 0: raw logits are not log-probabilities",
)
PPL_TOKEN_MISMATCH = _declare(
    "ppl.token-mismatch",
    "evaluation",
    "the engine scored other ids than those sent, or left out the actual prompt token",
)
PPL_COUNT_MISMATCH = _declare(
    "ppl.count-mismatch", "evaluation", "prompt_logprobs has not one entry per prompt token"
)
PPL_NON_FINITE = _declare(
    "ppl.non-finite", "evaluation", "a returned logprob is NaN, infinite or not a number"
)
PPL_RANK_MISMATCH = _declare(
    "ppl.rank-mismatch",
    "evaluation",
    "a returned `rank` contradicts the returned logprob values (order comes from values)",
)
PPL_CAP = _declare(
    "ppl.cap",
    "reference",
    "PPL on the held-out records (no sampled record better than the reference scored it) "
    "is at or under the challenge's cap",
    check=True,
)
TPS_TOKEN_COUNT = _declare(
    "tps.token-count",
    "evaluation",
    "a timed answer carries no token ids, so its tokens could not be counted",
)
TPS_TOKEN_INVALID = _declare(
    "tps.token-invalid",
    "evaluation",
    "a returned token id is outside the pinned tokenizer's vocabulary",
)
TPS_PROMPT_MISMATCH = _declare(
    "tps.prompt-mismatch",
    "evaluation",
    "the prompt ids the engine reports differ from the verifier's own rendering",
    check=True,
)
TPS_USAGE_MISMATCH = _declare(
    "tps.usage-mismatch",
    "evaluation",
    "`usage.completion_tokens` differs from the harness's own count",
)
TPS_UNSTABLE = _declare(
    "tps.unstable",
    "evaluation",
    "the timed trials disagree beyond the challenge's bound even after extra trials",
    effect="FAILED",
    check=True,
)
#: what a self-check's verdict leaves out: an unstable TPS is the participant's machine's
#: noise there, not a rule broken (the check and its finding stay in the report)
SELF_CHECK_IGNORES = frozenset({TPS_UNSTABLE})
TPS_REPRODUCTION = _declare(
    "tps.reproduction",
    "evaluation",
    "the blind median TPS is within the challenge's tolerance of the reported TPS",
    check=True,
)
INTEGRITY_LENGTHS = _declare(
    "integrity.lengths",
    "evaluation",
    "every timed answer has the requested length and finish reason, with no EOS padding",
    check=True,
)
INTEGRITY_CACHING = _declare(
    "integrity.caching",
    "evaluation",
    "prompts repeated in the timed stream are not markedly faster than fresh ones",
    check=True,
)
INTEGRITY_ISOLATION = _declare(
    "integrity.isolation",
    "evaluation",
    "the engine ran with no route out, a read-only root and no view of the held-out data",
    effect="FAILED",
    check=True,
)
ENGINE_RUNTIME_MISMATCH = _declare(
    "engine.runtime-mismatch",
    "evaluation",
    "what the engine reports it runs differs from the frozen config",
)

# -- reference: the verifier's own model judges the work, after the engine stopped --------
REFERENCE_SELF_TEST = _declare(
    "reference.self-test",
    "reference",
    "the verifier's reference computes attention correctly on the machine it judges on "
    "(its path against eager attention over the lengths its window makes special)",
    effect="FAILED",
    check=True,
)
INTEGRITY_REFERENCE_DECODE = _declare(
    "integrity.reference-decode",
    "reference",
    "the timed answers, teacher-forced through the verifier's model, are no lossier than an "
    "honest model's at the PPL cap (or, under the identity rule, the declared model's greedy "
    "decode)",
    check=True,
)
PPL_REFERENCE_MISMATCH = _declare(
    "ppl.reference-mismatch",
    "reference",
    "the engine scores sampled PPL records no better than the verifier's model, on average "
    "and per record, and its answers name their own top",
    check=True,
)
INTEGRITY_CONTROLS = _declare(
    "integrity.controls",
    "reference",
    "fresh controls, prompts made at run time and timed among the others, run no slower "
    "per token than the rest (at concurrency > 1: as a throughput, in a block of their own), "
    "and agree with the reference within the spec's budget",
    check=True,
)
INTEGRITY_SAME_PATH = _declare(
    "integrity.same-path",
    "reference",
    "the engine's own teacher-forced scoring of its timed answers agrees with them, and "
    "lists the verifier's top token",
    check=True,
)

# -- verdict ------------------------------------------------------------------------------
VERDICT_CHECKS_MISSING = _declare(
    "verdict.checks-missing",
    "verdict",
    "a check the challenge requires did not pass, so the result cannot be VERIFIED",
    severity="warning",
    effect="UNOFFICIAL",
)


#: the challenge spec's integrity settings (``integrity.<name>``) -> the check id they govern
SPEC_CHECKS: dict[str, str] = {
    "reference_decode": INTEGRITY_REFERENCE_DECODE,
    "reference_ppl": PPL_REFERENCE_MISMATCH,
    "same_path": INTEGRITY_SAME_PATH,
    "prompt_render": TPS_PROMPT_MISMATCH,
    "reproduction": TPS_REPRODUCTION,
    "lengths": INTEGRITY_LENGTHS,
    "caching": INTEGRITY_CACHING,
    "controls": INTEGRITY_CONTROLS,
    "isolation": INTEGRITY_ISOLATION,
}


def declared(check_id: str) -> CheckId | None:
    return CATALOG.get(check_id)


def effect_of(check_id: str, severity: str) -> str:
    """What a finding does to the verdict; undeclared ids are challenge rules (REJECTED)."""
    info = CATALOG.get(check_id)
    if info is not None:
        return info.effect if severity == info.severity else "none"
    return "REJECTED" if severity == "error" else "none"


def check_ids() -> list[str]:
    """Ids reported as check results, in catalog order."""
    return [c.id for c in CATALOG.values() if c.check]
