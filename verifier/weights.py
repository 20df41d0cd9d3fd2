"""The verifier's own pinned copy of the model weights.

The engine never brings its weights: the verifier mounts its own copy read-only, after
checking every pinned file's sha256, so weights cannot be swapped. A shipped model
(``model.shipped`` in the spec) comes from podium's data; any other is downloaded at the
spec's exact revision through huggingface_hub.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from podium.canonical import sha256_file
from podium.errors import HubError, PodiumError
from schemas.challenge import ChallengeSpec, PinnedFile
from verifier.datasets import shipped_path


class WeightsError(PodiumError, ValueError):
    """The verifier's copy of the weights does not match the spec's pin."""


@dataclass(frozen=True)
class PinnedModel:
    path: Path
    checked_files: int


def pinned_model(spec: ChallengeSpec) -> PinnedModel:
    model = spec.model
    return _pinned(model.repo_id, model.revision, model.shipped, "model", model.files or [])


def pinned_drafter(spec: ChallengeSpec) -> PinnedModel | None:
    """The challenge's drafter, checked like the model; None when the spec pins none."""
    drafter = spec.model.drafter
    if drafter is None:
        return None
    return _pinned(
        drafter.repo_id, drafter.revision, drafter.shipped, "drafter", drafter.files or []
    )


def _pinned(
    repo_id: str, revision: str, shipped: str | None, kind: str, files: list[PinnedFile]
) -> PinnedModel:
    if shipped:
        path = shipped_path(f"{shipped}/{kind}")
        if not path.is_dir():
            raise WeightsError(
                f"the shipped {kind} {shipped!r} is missing at {path}", hint="reinstall podium"
            )
    else:
        try:
            from huggingface_hub import snapshot_download
            from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

            path = Path(snapshot_download(repo_id, revision=revision))
        except (HfHubHTTPError, LocalEntryNotFoundError, OSError) as exc:
            raise HubError(
                f"could not fetch {repo_id}@{revision[:12]}: {exc}",
                hint="download the pinned revision into HF_HOME first (huggingface-cli download "
                f"{repo_id} --revision {revision})",
            ) from exc
    for pinned in files:
        file = path / pinned.path
        if not file.is_file():
            raise WeightsError(f"pinned {kind} file {pinned.path} is missing", where=str(file))
        if file.stat().st_size != pinned.size or sha256_file(file) != pinned.sha256:
            raise WeightsError(
                f"{kind} file {pinned.path} does not match its pinned sha256",
                hint="the verifier's copy was altered or is another revision; fetch it again",
                where=str(file),
            )
    return PinnedModel(path=path, checked_files=len(files))
