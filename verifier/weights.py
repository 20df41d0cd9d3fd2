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
from schemas.challenge import ChallengeSpec
from verifier.datasets import shipped_path


class WeightsError(PodiumError, ValueError):
    """The verifier's copy of the weights does not match the spec's pin."""


@dataclass(frozen=True)
class PinnedModel:
    path: Path
    checked_files: int


def pinned_model(spec: ChallengeSpec) -> PinnedModel:
    model = spec.model
    if model.shipped:
        path = shipped_path(f"{model.shipped}/model")
        if not path.is_dir():
            raise WeightsError(
                f"the shipped model {model.shipped!r} is missing at {path}", hint="reinstall podium"
            )
    else:
        try:
            from huggingface_hub import snapshot_download
            from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

            path = Path(snapshot_download(model.repo_id, revision=model.revision))
        except (HfHubHTTPError, LocalEntryNotFoundError, OSError) as exc:
            raise HubError(
                f"could not fetch {model.repo_id}@{model.revision[:12]}: {exc}",
                hint="download the pinned revision into HF_HOME first (huggingface-cli download "
                f"{model.repo_id} --revision {model.revision})",
            ) from exc
    checked = 0
    for pinned in model.files or []:
        file = path / pinned.path
        if not file.is_file():
            raise WeightsError(f"pinned weight file {pinned.path} is missing", where=str(file))
        if file.stat().st_size != pinned.size or sha256_file(file) != pinned.sha256:
            raise WeightsError(
                f"weight file {pinned.path} does not match its pinned sha256",
                hint="the verifier's copy was altered or is another revision; fetch it again",
                where=str(file),
            )
        checked += 1
    return PinnedModel(path=path, checked_files=checked)
