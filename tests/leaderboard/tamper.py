"""The hands of someone who can write to a store but holds no organizer key: on the
files of a folder, or by commits (and a force-push) on the fake Hub."""

from __future__ import annotations

import shutil
from pathlib import Path

from hubserver import FakeHub

REPO = "podium-org/leaderboard"


class Local:
    """A folder store and the hands of someone who can write to it."""

    def __init__(self, root: Path):
        self.root = root
        self.url = str(root)
        self._saved: dict[str, Path] = {}

    def delete(self, path: str) -> None:
        (self.root / path).unlink()

    def plant(self, path: str, data: bytes) -> None:
        (self.root / path).parent.mkdir(parents=True, exist_ok=True)
        (self.root / path).write_bytes(data)

    def read(self, path: str) -> bytes:
        return (self.root / path).read_bytes()

    def save(self) -> str:
        token = str(len(self._saved))
        self._saved[token] = self.root.with_name(f"saved-{token}")
        shutil.copytree(self.root, self._saved[token])
        return token

    def restore(self, token: str) -> None:
        shutil.rmtree(self.root)
        shutil.copytree(self._saved[token], self.root)


class Hub:
    """A Hub dataset store on the fake Hub, and commits as a collaborator would make them."""

    def __init__(self, hub: FakeHub):
        self.hub = hub
        self.url = f"hf://datasets/{REPO}?endpoint={hub.endpoint}"

    def delete(self, path: str) -> None:
        self.hub.delete_file(REPO, path)

    def plant(self, path: str, data: bytes) -> None:
        self.hub.put_file(REPO, path, data)

    def read(self, path: str) -> bytes:
        return self.hub.files(REPO)[path]

    def save(self) -> str:
        return self.hub.history(REPO)[0].oid

    def restore(self, token: str) -> None:
        self.hub.reset_branch(REPO, token)
