"""Turn signed reports into records and publish them: what ``podium verify --publish``
and ``podium leaderboard publish`` both do.

The organizer's public key is published alongside (``keys/<key_id>.pub``) so the
dataset card can name it; publishing is idempotent end to end.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from leaderboard.records import record_from_report
from leaderboard.stores.base import PublishResult, Store
from podium.signing import KeyPair


@dataclass(frozen=True)
class Published:
    store: str
    key_id: str
    records: list[dict[str, Any]]
    result: PublishResult

    def to_dict(self) -> dict[str, Any]:
        return {
            "store": self.store,
            "key_id": self.key_id,
            "records": [
                {
                    "record_id": r["record_id"],
                    "team": r["team"],
                    "entry": r["entry"],
                    "verdict": r["verdict"],
                    "reason": r["reason"],
                }
                for r in self.records
            ],
            **self.result.to_dict(),
        }


def publish_reports(
    reports: list[dict[str, Any]],
    store: Store,
    keypair: KeyPair,
    *,
    public_key: Ed25519PublicKey | None = None,
) -> Published:
    """Build a signed record from each signed report; publish them in one call."""
    unique: dict[str, dict[str, Any]] = {}
    for report in reports:
        rec = record_from_report(report, keypair, public_key=public_key)
        unique.setdefault(rec["record_id"], rec)
    records = list(unique.values())
    kid = store.publish_key(keypair.public_pem())
    result = store.publish(records)
    return Published(store.url, kid, records, result)
