"""A locked challenge spec: the pins an organizer adds before the challenge opens.

A challenge that requires isolation (``integrity.isolation``) promises VERIFIED rows
that nobody could bend; that holds only when the spec pins what the verifier runs and
who signs. Four parts make a spec *locked*:

- ``model.files``: the weight files (path, size, sha256), so the verifier's own copy is
  checked file by file before it is mounted (``verifier.weights``);
- ``model.drafter.files``: the same for the challenge's drafter, when it names one;
- ``engine.vllm.images.<gpu|cpu>``: the reference engine's base image for the spec's
  hardware, by digest, with ``digest_confirmed: true``;
- ``leaderboard.keys``: at least one organizer key that is not revoked, so viewers can
  check the rows (and, for a worker, the key it signs with is one of them).

``unlocked_parts`` names what is missing; ``require_locked`` is what a worker (and the
competition's server) calls before it claims anything. ``lock_document`` writes the pins
from what the organizer has here: a local snapshot of the weights (hashed here), the
local Docker engine's digest of the base image, and public key files. It trusts the
organizer's own machine and nothing a participant sends.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from podium.errors import UsageError
from podium.signing import KeyPair, key_id, load_public_key, public_raw_b64
from podium.timestamps import now_iso
from schemas.challenge import ChallengeSpec
from schemas.validate import validate

#: files of a model snapshot that are weights (at least one must be pinned)
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")
DIGEST = re.compile(r"@sha256:([0-9a-f]{64})$")
HASH_CHUNK = 8 << 20

#: (file, bytes hashed so far in it, its size): what a display hears while hashing
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class UnlockedPart:
    """One part of a spec left unlocked: the JSON path, why it matters, how to lock it."""

    part: str
    why: str
    how: str

    def to_dict(self) -> dict[str, str]:
        return {"part": self.part, "why": self.why, "how": self.how}


class UnlockedSpecError(UsageError):
    """A spec that requires isolation is used unlocked; ``parts`` names each part."""

    def __init__(self, spec: ChallengeSpec, parts: list[UnlockedPart]):
        self.parts = parts
        names = "; ".join(f"{p.part} ({p.why})" for p in parts)
        hows = sorted({p.how for p in parts})
        super().__init__(
            f"challenge {spec.id} requires isolation but its spec is not locked: {names}",
            hint="lock it: podium challenge lock SPEC " + " ".join(hows) + " -o LOCKED.json",
            where=spec.source,
        )


def image_slot(spec: ChallengeSpec) -> str:
    """The base image the spec's hardware runs: ``cpu`` or ``gpu``."""
    return "cpu" if spec.hardware.accelerator == "cpu" else "gpu"


def _digest_pinned(image: dict[str, Any] | None) -> bool:
    if not image or image.get("digest_confirmed") is not True:
        return False
    m = DIGEST.search(str(image.get("ref", "")))
    return m is not None and set(m[1]) != {"0"}


def unlocked_parts(spec: ChallengeSpec, *, signer: KeyPair | None = None) -> list[UnlockedPart]:
    """What ``spec`` leaves unlocked (nothing for a challenge without isolation)."""
    if not spec.check("isolation").get("enabled"):
        return []
    out: list[UnlockedPart] = []
    model = spec.model
    if not any(f.path.endswith(WEIGHT_SUFFIXES) for f in model.files or []):
        why = "no weight file pinned" if model.files else "no file pinned"
        out.append(UnlockedPart("model.files", why, "--weights DIR"))
    if model.drafter is not None and not model.drafter.files:
        out.append(UnlockedPart("model.drafter.files", "no file pinned", "--drafter DIR"))
    vllm = spec.engine.vllm
    if vllm is not None:
        slot = image_slot(spec)
        if not _digest_pinned((vllm.get("images") or {}).get(slot)):
            out.append(
                UnlockedPart(
                    f"engine.vllm.images.{slot}", "base image digest not confirmed", "--image REF"
                )
            )
    keys = [k for k in (spec.leaderboard.keys if spec.leaderboard else None) or []]
    live = {k.key_id for k in keys if not k.revoked_at}
    if not live:
        out.append(UnlockedPart("leaderboard.keys", "no organizer key pinned", "--pubkey PEM"))
    elif signer is not None and signer.key_id not in live:
        out.append(
            UnlockedPart(
                "leaderboard.keys",
                f"the signing key {signer.key_id} is not pinned, so no viewer would trust its rows",
                "--pubkey PEM",
            )
        )
    return out


def require_locked(spec: ChallengeSpec, *, signer: KeyPair | None = None) -> None:
    """Refuse (``UnlockedSpecError``) a spec that requires isolation and is not locked."""
    parts = unlocked_parts(spec, signer=signer)
    if parts:
        raise UnlockedSpecError(spec, parts)


# -- writing the pins ----------------------------------------------------------------


def snapshot_files(root: Path) -> list[Path]:
    """The files of a local model snapshot, sorted; hidden files and folders are left out
    (``.cache/``, ``.gitattributes``), links are followed (the Hub cache's layout)."""
    if not root.is_dir():
        raise UsageError(f"no such directory: {root}", hint="pass the model's local snapshot")
    files = [
        p
        for p in root.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
    ]
    if not files:
        raise UsageError(f"{root} holds no file", hint="pass the model's local snapshot")
    return sorted(files, key=lambda p: p.relative_to(root).as_posix())


def hash_file(path: Path, name: str, progress: Progress | None) -> str:
    import hashlib

    digest = hashlib.sha256()
    size = path.stat().st_size
    done = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(HASH_CHUNK):
            digest.update(chunk)
            done += len(chunk)
            if progress is not None:
                progress(name, done, size)
    return digest.hexdigest()


def pin_files(root: Path, progress: Progress | None = None) -> list[dict[str, Any]]:
    """``[{path, sha256, size}]`` of every file of the snapshot ``root``."""
    out = []
    for path in snapshot_files(root):
        name = path.relative_to(root).as_posix()
        out.append(
            {"path": name, "sha256": hash_file(path, name, progress), "size": path.stat().st_size}
        )
    return out


def _check_revision(root: Path, revision: str, what: str) -> None:
    """A Hub cache snapshot is named by its commit: one of another revision is refused."""
    if re.fullmatch(r"[0-9a-f]{40}", root.name) and root.name != revision:
        raise UsageError(
            f"{root} is the snapshot of revision {root.name[:12]}, but the spec pins {what} "
            f"at {revision[:12]}",
            hint=f"download the pinned revision (huggingface-cli download REPO --revision "
            f"{revision})",
            where=str(root),
        )


def image_pin(image: str, info: dict[str, Any]) -> tuple[str, str]:
    """(``name:tag@sha256:...``, how the digest was found) for a local image's ``info``
    (``podium.dockerx.image_info``): its registry digest when it has one, else its id."""
    name = image.split("@", 1)[0]
    repo = name.rsplit(":", 1)[0] if ":" in name.rsplit("/", 1)[-1] else name
    for entry in info.get("repo_digests") or []:
        entry_repo, _, digest = str(entry).partition("@")
        if entry_repo == repo and digest.startswith("sha256:"):
            return f"{name}@{digest}", "its registry digest (RepoDigests)"
    return f"{name}@{info['id']}", "its local image id (it has no registry digest)"


def _lock_image(doc: dict[str, Any], spec: ChallengeSpec, image: str, inspect: Any) -> str:
    engine = doc["engine"]
    if "vllm" not in engine:
        raise UsageError(
            f"--image: the {spec.id} spec names no reference engine base image (engine.vllm)",
            hint="leave out --image for this challenge",
        )
    slot = image_slot(spec)
    entry = engine["vllm"]["images"].setdefault(slot, {"ref": image, "source": ""})
    ref, how = image_pin(image, inspect(image))
    entry["ref"] = ref
    entry["digest_confirmed"] = True
    entry["source"] = (
        f"Locked by podium challenge lock from the local Docker engine at {now_iso()}: "
        f"{image} pinned by {how}."
    )
    return ref


def default_image(spec: ChallengeSpec) -> str | None:
    """The base image ``--image`` defaults to: the spec's own, without its digest."""
    vllm = spec.engine.vllm
    entry = ((vllm or {}).get("images") or {}).get(image_slot(spec)) or {}
    ref = entry.get("ref")
    return str(ref).split("@", 1)[0] if ref else None


def _add_keys(doc: dict[str, Any], pubkeys: Iterable[Path]) -> list[str]:
    keys = doc.setdefault("leaderboard", {}).setdefault("keys", [])
    added = []
    for path in pubkeys:
        public = load_public_key(path)
        kid = key_id(public)
        if all(k.get("key_id") != kid for k in keys):
            keys.append({"key_id": kid, "public_key": public_raw_b64(public)})
        added.append(kid)
    return added


def lock_document(
    spec: ChallengeSpec,
    *,
    weights: Path | None,
    drafter: Path | None = None,
    image: str | None = None,
    pubkeys: Iterable[Path] = (),
    inspect: Callable[[str], dict[str, Any]] | None = None,
    progress: Progress | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the locked spec document, what was pinned); validated against the schema.

    ``inspect(ref)`` returns a local image's ``image_info`` (default: the local Docker
    engine's, asked only when an image is to be locked).
    """
    doc = copy.deepcopy(spec.to_dict())
    pinned: dict[str, Any] = {}
    if image is not None:  # first: a missing image stops the lock before hours of hashing
        pinned[f"engine.vllm.images.{image_slot(spec)}"] = _lock_image(
            doc, spec, image, inspect or _docker_inspect
        )
    if weights is not None:
        _check_revision(weights, spec.model.revision, "the model")
        doc["model"]["files"] = pin_files(weights, progress)
        pinned["model.files"] = len(doc["model"]["files"])
    if drafter is not None:
        if spec.model.drafter is None:
            raise UsageError(f"--drafter: the {spec.id} spec names no drafter (model.drafter)")
        _check_revision(drafter, spec.model.drafter.revision, "the drafter")
        doc["model"]["drafter"]["files"] = pin_files(drafter, progress)
        pinned["model.drafter.files"] = len(doc["model"]["drafter"]["files"])
    if pubkeys:
        pinned["leaderboard.keys"] = _add_keys(doc, pubkeys)
    validate("challenge", doc, file=spec.source)
    return doc, pinned


def _docker_inspect(ref: str) -> dict[str, Any]:
    from podium.dockerx import connect, image_info
    from podium.errors import DockerError

    client = connect()
    try:
        return image_info(client, ref)
    except DockerError as exc:
        raise DockerError(
            exc.message,
            hint=f"pull it first (docker pull {ref}), name another with --image REF, or "
            "leave the spec's image as it is with --no-image",
            where="--image",
        ) from None
