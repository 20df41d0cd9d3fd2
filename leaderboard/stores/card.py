"""The dataset card (``README.md``) written at the root of every store.

It tells a reader of the dataset what a row is and how to check one without trusting
the host: fetch the organizer's public key from somewhere other than this dataset and
run ``podium leaderboard verify``.
"""

from __future__ import annotations

CARD_TEMPLATE = """\
---
pretty_name: podium leaderboard
tags:
- podium
- leaderboard
- llm-inference
---

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
| `toolkit_version`, `verified_at` | podium version and when the verification finished |
| `findings` | the first findings of the report (check id, severity, message) |
| `signature` | Ed25519 over the canonical JSON of the row without `signature` |

The JSON Schema of a row is `schemas/json/record.schema.json` in podium.

## Public keys

Rows are signed with these keys (files under `keys/`). Compare the key id with one the
organizers publish elsewhere before trusting it.

{keys}

## Verify every row

```
pip install podium
podium leaderboard verify --store {url} --pubkey organizer.pem.pub
```

It checks each row's schema, id and signature and lists any forged or altered row
(exit status 1 if there is one).
"""


def render_card(keys: dict[str, bytes], url: str) -> str:
    if keys:
        lines = "\n".join(f"- `{kid}`: `keys/{kid}.pub`" for kid in sorted(keys))
    else:
        lines = "- (no key published yet)"
    return CARD_TEMPLATE.format(keys=lines, url=url)
