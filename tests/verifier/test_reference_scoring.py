"""The reference phase scores each distinct sequence once, however many answers repeat it:
an engine that replays one answer thousands of times costs the verifier one scoring of it,
and every answer still gets the reference's entries for its own ids."""

from __future__ import annotations

import asyncio
from typing import Any

from harness_util import small_spec

from verifier.harness.client import Reply
from verifier.harness.rescoring import _Gather, _Job


class RecordingReference:
    """Answers each scored prompt with entries that name the prompt, and keeps what it got."""

    def __init__(self) -> None:
        self.scored: list[list[int]] = []

    def _reply(self, ids: list[int]) -> Reply:
        self.scored.append(list(ids))
        entries: list[dict[str, Any] | None] = [{"of": sum(ids), "at": i} for i in range(len(ids))]
        return Reply("", None, list(ids), entries, "length", None, 0.0)

    async def post(self, path: str, body: dict[str, Any], kind: str, **_: Any) -> Reply:
        return self._reply(body["prompt"])

    async def post_many(self, path: str, body: dict[str, Any], kind: str, **_: Any) -> list[Reply]:
        return [self._reply(ids) for ids in body["prompt"]]


def test_a_repeated_sequence_is_scored_once_and_every_answer_gets_its_entries() -> None:
    ref = RecordingReference()
    replayed, fresh = [1, 2, 3, 4], [1, 2, 3, 5]
    jobs = [_Job(f"answer {i}", list(replayed)) for i in range(500)]
    jobs += [_Job("fresh", list(fresh)), _Job("fresh again", list(fresh))]
    gather = _Gather(ref, "m", small_spec(), None)  # type: ignore[arg-type]
    asyncio.run(gather.score(jobs))
    assert sorted(ref.scored) == [replayed, fresh]
    for job in jobs:
        assert job.entries is not None and len(job.entries) == len(job.ids)
        assert job.entries[0] == {"of": sum(job.ids), "at": 0}
