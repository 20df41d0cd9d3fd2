"""Fresh controls: timed prompts made at run time, which no precomputed table can hold.

An engine that knows the prompt corpus (a shipped held-out set, one drawn from a public
dataset) can decode every prompt before the verifier asks and replay the answers: each
is the model's exact greedy answer and no timed prompt repeats, so nothing in the answers
shows it. What it cannot know is a prompt that did not exist before the run. So every
trial (extra ones included) carries ``integrity.controls.per_trial`` such prompts among
its timed requests (``verifier.harness.plan``), made here from the verifier's plan seed (fresh for
every verification, recorded in the report only once the run is over):

- each is shaped like the held-out prompt it stands in for, drawn at random: the same
  kind (text, chat messages, token ids) and, per message, about the same length;
- its text is spliced from clauses of the held-out prompts themselves (split after
  ``, ; : . ? !``), drawn at random and cut at a word to the length wanted, so its
  statistics are the held-out set's own: an honest engine, speculation included
  (n-gram lookup finds in it what it finds in a real prompt), runs it at the speed of a
  real one. Token-id prompts are spliced from spans of held-out ids the same way;
- none equals a held-out prompt (a draw that does is drawn again).

The controls are sent, timed and counted exactly like the prompts they replace
(``verifier.harness.tps``); ``integrity.controls`` compares their speed and their
agreement with the reference against the rest. The number of spliced texts the seed can
pick from is astronomically larger than any table: with ``k`` clauses of ``C`` in the
set, about ``C ** k`` texts of ``k`` clauses.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from typing import Any

from verifier.harness.tps import Prompt

#: a clause ends after one of these, before white space
_CLAUSE = re.compile(r"(?<=[,;:.?!])\s+")
#: token-id prompts are spliced from spans of this many ids, at most
_SPAN = 12
#: draws of one control before giving up on making it differ from every held-out prompt
_TRIES = 20


def fresh_controls(heldout: Sequence[Prompt], n: int, rng: random.Random) -> list[Prompt]:
    """``n`` prompts made from ``rng``, each shaped like a held-out prompt drawn at random."""
    if n <= 0 or not heldout:
        return []
    clauses = [c for p in heldout for text in _texts(p["prompt"]) for c in _clauses(text)]
    ids = [p["prompt"] for p in heldout if _is_ids(p["prompt"])]
    known = {_key(p["prompt"]) for p in heldout}
    out: list[Prompt] = []
    for _ in range(n):
        for _ in range(_TRIES):
            base = rng.choice(list(heldout))["prompt"]
            prompt = _like(base, clauses, ids, rng)
            if prompt is not None and _key(prompt) not in known:
                break
        else:
            continue  # nothing to splice from (an empty set of texts): no control
        out.append({"id": f"fresh-{rng.getrandbits(48):012x}", "prompt": prompt})
    return out


def _like(base: Any, clauses: list[str], ids: list[list[int]], rng: random.Random) -> Any:
    if _is_ids(base):
        return _spliced_ids(len(base), ids, rng)
    if not clauses:
        return None
    if isinstance(base, str):
        return _spliced_text(len(base), clauses, rng)
    out = []
    for message in base:
        copy = dict(message)
        if isinstance(copy.get("content"), str) and copy["content"]:
            copy["content"] = _spliced_text(len(copy["content"]), clauses, rng)
        out.append(copy)
    return out


def _spliced_text(length: int, clauses: list[str], rng: random.Random) -> str:
    """Clauses drawn at random while they fit in ``length`` characters; the first that
    does not is cut at a word (and ends the text)."""
    parts: list[str] = []
    size = 0
    while True:
        clause = rng.choice(clauses)
        room = length - size - (1 if parts else 0)
        if len(clause) <= room:
            parts.append(clause)
            size += len(clause) + (1 if len(parts) > 1 else 0)
            continue
        head = clause[: room + 1]
        cut = head.rsplit(" ", 1)[0] if " " in head else ""
        if cut:
            parts.append(cut.rstrip(",;:") + ".")
        elif not parts:
            parts.append(clause)
        break
    text = " ".join(parts)
    return text[:1].upper() + text[1:]


def _spliced_ids(length: int, ids: list[list[int]], rng: random.Random) -> list[int]:
    out: list[int] = []
    while len(out) < length:
        source = rng.choice(ids)
        start = rng.randrange(len(source))
        out.extend(source[start : start + rng.randint(1, _SPAN)])
    return out[:length]


def _clauses(text: str) -> list[str]:
    return [c.strip() for c in _CLAUSE.split(text) if c.strip()]


def _texts(prompt: Any) -> list[str]:
    if isinstance(prompt, str):
        return [prompt]
    if isinstance(prompt, list):
        return [
            m["content"]
            for m in prompt
            if isinstance(m, dict) and isinstance(m.get("content"), str)
        ]
    return []


def _is_ids(prompt: Any) -> bool:
    return isinstance(prompt, list) and bool(prompt) and all(isinstance(t, int) for t in prompt)


def _key(prompt: Any) -> str:
    return repr(prompt)
