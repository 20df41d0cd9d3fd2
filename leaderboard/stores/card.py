"""The dataset card (``README.md``) written at the root of every store.

It tells a reader of the dataset what a row is and how to check one without trusting
the host: fetch the organizer's public key from somewhere other than this dataset and
run ``podium leaderboard verify``, or load the checked rows with
``leaderboard.dataset.checked_dataset``; and it says what ``datasets.load_dataset`` does
not check (anything).

Its front matter declares one ``configs`` entry per challenge, over
``records/<challenge>/*.json``, with the rows' features, so the Hub's dataset viewer
and ``datasets.load_dataset(repo_or_folder, "<challenge>")`` read one row per record
(and never take the public keys under ``keys/`` for data). The submitted engine config
and the findings vary from row to row, so they are typed ``json``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

_S: dict[str, Any] = {"dtype": "string"}
_F: dict[str, Any] = {"dtype": "float64"}


def _struct(name: str, fields: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {"name": name, "struct": [{"name": k, **v} for k, v in fields.items()]}


#: The features of a row, in the card's YAML form (``datasets.Features._to_yaml_list``).
FEATURES: list[dict[str, Any]] = [
    {"name": "schema_version", "dtype": "int64"},
    *({"name": n, **_S} for n in ("kind", "record_id", "report_id", "report_sha256")),
    _struct("challenge", {"id": _S, "version": _S}),
    *({"name": n, **_S} for n in ("team", "entry", "verdict", "mode", "reason")),
    _struct(
        "metrics",
        {
            "tps": _F,
            "tps_ci95": {"list": "float64"},
            "tps_cv": _F,
            "reported_tps": _F,
            "ppl": _F,
            "ppl_cap": _F,
            "speedup": _F,
            "baseline_tps": _F,
        },
    ),
    _struct("engine", {"kind": _S, "config": {"dtype": "json"}}),
    _struct("hardware", {"gpu_name": _S, "official": {"dtype": "bool"}, "summary": _S}),
    *({"name": n, **_S} for n in ("fingerprint_sha256", "image_id")),
    _struct("submitter", {"team": _S, "user": _S}),
    *({"name": n, **_S} for n in ("bundle_sha256", "toolkit_version")),
    {"name": "verified_at", **_S},
    {"name": "findings", "dtype": "json"},
    _struct("signature", {"alg": _S, "key_id": _S, "value": _S}),
]


def front_matter(challenges: Iterable[str]) -> str:
    """The card's YAML header: tags, one config per challenge and its features."""
    names = sorted(set(challenges))
    lines = ["---", "pretty_name: podium leaderboard", "tags:"]
    lines += ["- podium", "- leaderboard", "- llm-inference"]
    if names:
        lines.append("configs:")
        for name in names:
            lines += [
                f"- config_name: {json.dumps(name)}",
                "  data_files:",
                "  - split: train",
                f"    path: {json.dumps(f'records/{name}/*.json')}",
            ]
        lines.append("dataset_info:")
        features = json.dumps(FEATURES, separators=(", ", ": "))
        for name in names:
            lines += [f"- config_name: {json.dumps(name)}", f"  features: {features}"]
    return "\n".join([*lines, "---", ""])


CARD_TEMPLATE = """\

# podium leaderboard

Each file under `records/<challenge>/<record_id>.json` is one leaderboard row: the
summary of one signed verification report produced by `podium verify`. Rows are
never edited; a new verification is a new file. `record_id` is derived from the
report id, bundle digest, challenge, verdict and metrics, so the same verification
published twice is one file.

## Fields

| field | meaning |
|---|---|
| `record_id`, `report_id`, `report_sha256` | ids of this row and of its signed report |
| `challenge` | `{{id, version}}` of the challenge spec |
| `team`, `entry` | who submitted what |
| `verdict` | VERIFIED, UNOFFICIAL, REJECTED, FAILED or PENDING |
| `mode` | `official` or `self-check` (self-checks are never VERIFIED) |
| `reason` | one line: empty for VERIFIED, else why not (e.g. `PPL 2.437 > cap 2.415`) |
| `metrics` | `tps` (median), `tps_ci95`, `tps_cv`, `reported_tps`, `ppl`, `ppl_cap`, |
| | `speedup`, `baseline_tps` |
| `engine` | engine kind and the submitted engine config |
| `hardware` | GPU name, whether it is the challenge's official hardware, a summary |
| `fingerprint_sha256`, `image_id`, `bundle_sha256` | what ran, where |
| `submitter` | `{{team, user}}` the competition's door authenticated (absent without one) |
| `toolkit_version`, `verified_at` | podium version and when the verification finished |
| `findings` | the first findings of the report (check id, severity, message) |
| `signature` | Ed25519 over the canonical JSON of the row without `signature` |

The JSON Schema of a row is `schemas/json/record.schema.json` in podium.

## Public keys

Rows are signed with these keys (files under `keys/`). Compare the key id with one the
organizers publish elsewhere before trusting it: anyone who can write a row here can
write a key here too, so podium's views never trust a key found only in this dataset.

{keys}

## Load it

`datasets.load_dataset` reads every file under `records/<challenge>/` as a row and
**checks nothing**: not a row's signature, not whether the key that signed it is the
organizers', not the signed head `log/head.json`. Anyone who can write to this dataset
can add a forged row (it loads as `VERIFIED`), delete a rival's, or put back an older
copy of the whole set, and `load_dataset` returns it all the same. Use it to explore,
never as the board.

The checked rows, as a `datasets.Dataset`, in one call (`pip install 'podium[data]'`):

```
from leaderboard.dataset import checked_dataset
rows = checked_dataset("{url}", challenge="tiny", pubkeys=["organizer.pem.pub"])
```

It checks every row and the whole set as `podium leaderboard verify` does, returns only
the rows that pass (one column per field, plus the signed row as `record_json`), and
raises `SetCheckError` instead when the set does not check. The unchecked read:

```
import datasets
rows = datasets.load_dataset("{load}", "tiny", split="train")  # checks nothing
```

## Verify every row

```
pip install podium
podium leaderboard verify --store {url} --pubkey organizer.pem.pub
```

It checks each row's schema, id and signature, and the whole set against the signed
head `log/head.json` (no listed row missing, no row unlisted, no rollback, not stale),
and lists anything wrong (exit status 1 if there is).
"""


def render_card(keys: dict[str, bytes], url: str, challenges: Iterable[str] | None = None) -> str:
    """The card; ``challenges`` are those the store holds (default: the shipped ones)."""
    if challenges is None:
        from schemas.challenge import list_challenges

        challenges = list_challenges()
    if keys:
        lines = "\n".join(f"- `{kid}`: `keys/{kid}.pub`" for kid in sorted(keys))
    else:
        lines = "- (no key published yet)"
    load = url.removeprefix("hf://datasets/").split("@")[0].split("?")[0]
    return front_matter(challenges) + CARD_TEMPLATE.format(keys=lines, url=url, load=load)
