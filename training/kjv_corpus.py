"""The King James Version corpus: parsing, the train/held-out split, and training documents.

The corpus ships as ``training/corpus/kjv.txt.gz``: the output of Debian's ``bible``
program (packages ``bible-kjv`` + ``bible-kjv-text``) for ``Gen1:1-Rev22:21`` with one
verse per line. The text itself is public domain (see docs/tiny-model.md).

The split is by chapter and fixed: every tenth chapter (1-based chapter number in the
whole Bible divisible by 10) is held out and never reaches the tokenizer or the model
during training. Held-out chapters are further divided between the public and the
held-out evaluation files, so the two sets of measurements never share text.
"""

from __future__ import annotations

import gzip
import re
from dataclasses import dataclass
from pathlib import Path

CORPUS_PATH = Path(__file__).resolve().parent / "corpus" / "kjv.txt.gz"
HELDOUT_EVERY = 10
_VERSE = re.compile(r"^\s+(\d+) (.*)$")


@dataclass(frozen=True)
class Chapter:
    """One chapter: its position in the whole Bible (1-based), title, and verses."""

    number: int
    title: str
    verses: tuple[str, ...]

    @property
    def heldout(self) -> bool:
        return self.number % HELDOUT_EVERY == 0

    def text(self) -> str:
        """The document the model sees: the title line, then one verse per line."""
        return self.title + "\n" + "\n".join(self.verses) + "\n"


def load_chapters(path: Path = CORPUS_PATH) -> list[Chapter]:
    """Parse the ``bible`` dump: a title line per chapter, then numbered verse lines."""
    chapters: list[Chapter] = []
    title: str | None = None
    verses: list[str] = []
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for raw in fh:
            line = raw.rstrip("\n")
            if not line.strip():
                continue
            match = _VERSE.match(line)
            if match:
                if title is None:
                    raise ValueError(f"verse before any chapter title: {line!r}")
                verses.append(match.group(2).strip())
                continue
            if title is not None:
                chapters.append(Chapter(len(chapters) + 1, title, tuple(verses)))
            title, verses = line.strip(), []
    if title is not None:
        chapters.append(Chapter(len(chapters) + 1, title, tuple(verses)))
    return chapters


def split(chapters: list[Chapter]) -> tuple[list[Chapter], list[Chapter]]:
    """Return (training chapters, held-out chapters)."""
    return [c for c in chapters if not c.heldout], [c for c in chapters if c.heldout]


def chat_examples(chapters: list[Chapter], every: int = 12) -> list[tuple[str, str]]:
    """(user, model) pairs: a verse, then the two verses after it.

    A small share of chat-formatted documents teaches the model the turn markers, so a
    chat-templated prompt (as the throughput benchmark sends) continues in plain English.
    """
    pairs: list[tuple[str, str]] = []
    for chapter in chapters:
        verses = chapter.verses
        for i in range(0, len(verses) - 2, every):
            pairs.append((verses[i], verses[i + 1] + "\n" + verses[i + 2]))
    return pairs
