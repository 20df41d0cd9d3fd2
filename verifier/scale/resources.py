"""What a worker or a dispatcher works from, opened from the names a person gives.

The queue (which must exist already: only ``podium queue submit`` makes one), the
challenge spec each request is verified against (``--challenge``), the volumes a job
mounts (a Hub dataset at a revision, or a folder here), the jobs backend and the harness
image a dispatcher starts its jobs with.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from podium.errors import UsageError
from podium.remote import is_remote
from schemas.challenge import ChallengeSpec, load_challenge
from verifier.scale.dispatch.jobs import JobsBackend, VolumeSpec
from verifier.scale.queue.stores import LocalQueue, hub_repo_of, open_queue
from verifier.scale.queue.stores.base import QueueStore


def existing_queue(url: str | None) -> QueueStore:
    """A queue to read or work from: a local folder that does not exist is an error (only
    ``podium queue submit`` makes a new one)."""
    queue = open_queue(url)
    if isinstance(queue, LocalQueue) and not queue.root.is_dir():
        what = "no such folder" if not queue.root.exists() else "not a folder"
        raise UsageError(
            f"no queue at {queue.root}: {what}",
            hint="pass --queue with a queue folder or hf://datasets/ORG/NAME; "
            "`podium queue submit BUNDLE --queue DIR` creates one",
            where="--queue",
        )
    return queue


def volume(uri: str, mount: str) -> VolumeSpec:
    """A job's volume at ``mount``: ``hf://datasets/ORG/NAME[@REV]`` or a folder here."""
    if uri.startswith("hf://"):
        repo, _ = hub_repo_of(uri.split("@")[0])
        rev = uri.split("@", 1)[1] if "@" in uri else None
        return VolumeSpec("dataset", repo, mount, revision=rev)
    return VolumeSpec("local", str(Path(uri).resolve()), mount)


def queue_volume(queue: QueueStore) -> VolumeSpec:
    """Where a harness job finds the queue's files (its bundles): ``/queue``."""
    if isinstance(queue, LocalQueue):
        return volume(str(queue.root), "/queue")
    return volume(queue.url, "/queue")


def jobs_backend(kind: str, *, namespace: str | None, image_repo: str | None) -> JobsBackend:
    """``local``: Docker here (a rehearsal); else Hugging Face Jobs in ``namespace``, with
    ``$HF_ENDPOINT`` and ``$HF_TOKEN``."""
    if kind == "local":
        from verifier.scale.dispatch.local import LocalJobs

        return LocalJobs()
    from verifier.scale.dispatch.hf import HfJobs

    if not namespace:
        raise UsageError("--namespace is needed for HF Jobs", hint="your user or org name")
    return HfJobs(
        namespace=namespace,
        endpoint=os.environ.get("HF_ENDPOINT"),
        token=os.environ.get("HF_TOKEN"),
        image_repo=image_repo,
    )


def harness_image(kind: str, given: str | None) -> str | None:
    """The harness jobs' image: the one given, else for a rehearsal (``local``) podium's
    image built here; None keeps the dispatcher's default."""
    if given:
        return given
    if kind == "local":
        from verifier.scale.dispatch.harness_image import build_harness_image

        return build_harness_image()
    return None


def spec_source(given: ChallengeSpec | None) -> Callable[[str], ChallengeSpec]:
    """What a worker or a dispatcher verifies a request against: ``given`` (the spec of
    ``--challenge``, by name, path, URL or ``hf://``) for requests of its challenge id,
    and the shipped spec of the id a request names for any other."""
    if given is None:
        return load_challenge

    def spec_for(challenge_id: str) -> ChallengeSpec:
        return given if challenge_id == given.id else load_challenge(challenge_id)

    return spec_for


def remote_challenge(given: str | None, spec: ChallengeSpec | None) -> dict[str, str]:
    """Challenge id -> the reference a harness job loads it by (``--challenge``): a job
    cannot read a spec file of this machine, so a given spec must be a URL or ``hf://``
    (or a shipped name)."""
    if given is None or spec is None:
        return {}
    if is_remote(given) or (not Path(given).suffix and not Path(given).exists()):
        return {spec.id: given}
    raise UsageError(
        f"--challenge {given}: a harness job cannot read a spec file of this machine",
        hint="publish the (locked) spec where the job can fetch it and pass that: "
        "hf://datasets/ORG/NAME/challenge.json or https://...",
        where="--challenge",
    )
