"""The checked rows of a store as a ``datasets.Dataset``, in one call.

``datasets.load_dataset`` on a store reads every file under ``records/<challenge>/``
as a row and checks nothing: not a row's signature, not whether its key is the
organizers', not the signed head (a row deleted, a forged row added, the store rolled
back). ``checked_dataset`` runs the check every view runs (``leaderboard.checked``, with
the viewer's memory of heads) and returns only the rows that pass, flat as ``export``
writes them (one column per field, plus the whole signed row as ``record_json``); when
the whole set does not check it raises ``SetCheckError`` instead of returning a part.

``datasets`` (the ``data`` extra) is imported only here, when called.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from leaderboard.stores import open_existing_store
from leaderboard.trust import build_trust
from leaderboard.views.board import read_checked
from leaderboard.views.export import COLUMNS, flat_row
from podium.errors import SetCheckError
from podium.extras import require

#: the ``datasets`` feature type of each ``export`` column type
_DTYPES = {"string": "string", "double": "float64", "bool": "bool"}


def checked_dataset(
    store: str | None = None,
    *,
    challenge: str | None = None,
    pubkeys: Iterable[Path | str] = (),
    spec_keys: bool = True,
) -> Any:
    """The rows of ``store`` (a folder or ``hf://datasets/ORG/NAME``) that pass the check,
    as a ``datasets.Dataset``, sorted by ``record_id``; ``challenge``: only its rows.

    The keys trusted are those the shipped challenge specs pin and ``pubkeys`` (the
    organizers' public key files), as for ``podium leaderboard show``. Raises
    ``SetCheckError`` naming the first problem when the whole set does not check.

    Example::

        from leaderboard.dataset import checked_dataset
        rows = checked_dataset("hf://datasets/org/lb", pubkeys=["organizer.pem.pub"])
    """
    datasets = require("datasets", extra="data")
    trust = build_trust([Path(p) for p in pubkeys], spec_keys_too=spec_keys)
    st = open_existing_store(store)
    check = read_checked(st, trust, challenge)
    if check.set_problems:
        first = check.set_problems[0]
        more = len(check.set_problems) - 1
        raise SetCheckError(
            f"the set of {st.url} does not check ({first.kind}): {first.message}"
            + (f" (and {more} more)" if more else ""),
            where=st.url,
            hint=f"podium leaderboard verify --store {st.url} lists every problem",
        )
    rows = [flat_row(r) for r in sorted(check.records, key=lambda r: str(r.get("record_id")))]
    features = datasets.Features({name: datasets.Value(_DTYPES[kind]) for name, kind in COLUMNS})
    return datasets.Dataset.from_list(rows, features=features)
