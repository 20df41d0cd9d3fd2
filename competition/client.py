"""The other side of ``podium server``'s API: participants, the organizer and workers.

``DoorClient`` turns every refusal back into the podium error it was raised as (a 401
is ``NotLoggedIn``, a 429 ``QuotaExceeded`` with its ``retry_after``...), so the CLI
prints it and exits as it would for the same error here. ``ServerQueue`` is a
``WorkQueue``: ``podium worker --server`` runs the same claim loop, leases and fence as
a worker on a folder or Hub queue; it sends the signed report with its conclusion, and
the server publishes it under the request's row lock.
"""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx2

from competition.errors import (
    DatabaseUnavailable,
    NotFound,
    NotLoggedIn,
    QuotaExceeded,
    Refused,
    WrongChallenge,
)
from competition.wire import claim_from_dict, claim_to_dict
from podium.errors import BundleError, HubError, PodiumError, StoreError, UsageError
from verifier.scale.queue import request as rq
from verifier.scale.queue.request import Claim, LeaseLost, QueueRequest

BY_STATUS: dict[int, type[PodiumError]] = {
    401: NotLoggedIn,
    403: Refused,
    404: NotFound,
    409: LeaseLost,
    422: WrongChallenge,
    502: HubError,
    503: DatabaseUnavailable,
}


def hf_token() -> str | None:
    """``HF_TOKEN``, else the token huggingface_hub's login saved."""
    if os.environ.get("HF_TOKEN"):
        return os.environ["HF_TOKEN"]
    from huggingface_hub import get_token

    return get_token()


def raise_for(resp: httpx2.Response, url: str) -> None:
    if resp.status_code < 400:
        return
    try:
        err = resp.json()["error"]
        message, hint = str(err["message"]), err.get("hint")
    except (ValueError, KeyError, TypeError):
        err, message, hint = {}, f"HTTP {resp.status_code} from {url}", None
    where = err.get("where")
    if "finding_id" in err:
        raise BundleError(message, finding_id=err["finding_id"], hint=hint, where=where)
    if resp.status_code == 429:
        retry = int(resp.headers.get("Retry-After") or err.get("retry_after") or 60)
        raise QuotaExceeded(
            message, retry_after=retry, next_slot=str(err.get("next_slot")), hint=hint or ""
        )
    cls = BY_STATUS.get(resp.status_code)
    if cls is None:
        cls = UsageError if resp.status_code < 500 else StoreError
    raise cls(message, hint=hint, where=where)


class DoorClient:
    def __init__(self, url: str, token: str | None, *, timeout: float = 120.0):
        self.url = url.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx2.Client(base_url=self.url, headers=headers, timeout=timeout)

    def close(self) -> None:
        self.http.close()

    def call(self, method: str, path: str, **kw: Any) -> httpx2.Response:
        try:
            resp = self.http.request(method, path, **kw)
        except httpx2.TransportError as exc:
            raise StoreError(
                f"cannot reach the competition server: {exc}",
                where=self.url,
                hint="check --server; the organizer's server may be down",
            ) from None
        raise_for(resp, self.url + path)
        return resp

    def get(self, path: str, **params: Any) -> Any:
        clean = {k: v for k, v in params.items() if v is not None}
        return self.call("GET", path, params=clean).json()

    def post(self, path: str, body: dict[str, Any] | None = None) -> Any:
        return self.call("POST", path, json=body or {}).json()

    # -- the participant ------------------------------------------------------------

    def submit(self, bundle: Path) -> dict[str, Any]:
        if not bundle.is_file():
            raise UsageError(
                f"no such bundle: {bundle}", hint="package one with `podium submission package`"
            )
        with open(bundle, "rb") as fh:
            resp = self.call(
                "POST", "/v1/submissions", content=fh, headers={"Content-Type": "application/gzip"}
            )
        doc: dict[str, Any] = resp.json()
        return doc

    def status(self, request_id: str | None = None) -> dict[str, Any]:
        if request_id:
            doc: dict[str, Any] = self.get(f"/v1/requests/{request_id}")
            return doc
        return {**self.get("/v1/me"), **self.get("/v1/requests")}


class ServerQueue:
    """A ``WorkQueue`` over ``podium server``'s worker API."""

    def __init__(self, url: str, worker_token: str, *, worker: str):
        self.client = DoorClient(url, worker_token)
        self.url, self.worker = self.client.url, worker

    @staticmethod
    def _claim_doc(c: Claim) -> dict[str, Any]:
        return claim_to_dict(c)

    def claim(
        self, worker: str, lease_s: float, challenge: str | None = None
    ) -> tuple[QueueRequest, Claim] | None:
        body: dict[str, Any] = {"worker": worker, "lease_s": lease_s}
        if challenge is not None:
            body["challenge"] = challenge
        got = self.client.post("/v1/worker/claim", body)
        if got["request"] is None:
            return None
        return QueueRequest.parse(got["request"]), claim_from_dict(got["claim"])

    def renew(self, claims: list[Claim], lease_s: float) -> tuple[list[Claim], list[str]]:
        body = {"claims": [self._claim_doc(c) for c in claims], "lease_s": lease_s}
        body["worker"] = self.worker
        try:
            got = self.client.post("/v1/worker/renew", body)
        except NotLoggedIn:  # the token was revoked: every lease it held has ended
            return [], [c.request_id for c in claims]
        return [claim_from_dict(c) for c in got["renewed"]], list(got["lost"])

    def finish(
        self, claim: Claim, result: dict[str, Any], at: datetime | None = None
    ) -> QueueRequest:
        report_path = (result.get("logs") or {}).get("report")
        report = json.loads(Path(report_path).read_text()) if report_path else None
        body = {"claim": self._claim_doc(claim), "result": result, "report": report}
        body["at"] = rq.iso(at) if at is not None else None
        got = self.client.post("/v1/worker/finish", {**body, "worker": self.worker})
        return QueueRequest.parse(got["request"])

    def fail(
        self,
        claim: Claim,
        message: str,
        result: dict[str, Any] | None = None,
        at: datetime | None = None,
    ) -> QueueRequest:
        body = {"claim": self._claim_doc(claim), "message": message, "result": result}
        body["at"] = rq.iso(at) if at is not None else None
        got = self.client.post("/v1/worker/fail", {**body, "worker": self.worker})
        return QueueRequest.parse(got["request"])

    def release(self, claim: Claim, note: str) -> QueueRequest:
        body = {"claim": self._claim_doc(claim), "note": note, "worker": self.worker}
        return QueueRequest.parse(self.client.post("/v1/worker/release", body)["request"])

    def fetch_bundle(self, req: QueueRequest, dest: Path) -> Path:
        from podium.canonical import sha256_file

        dest.mkdir(parents=True, exist_ok=True)
        data = self.client.call("GET", f"/v1/worker/bundle/{req.request_id}").content
        path = dest / f"{req.bundle_sha256}.tar.gz"
        path.write_bytes(data)
        if sha256_file(path) != req.bundle_sha256:
            raise StoreError(f"the bundle of {req.request_id} does not match its sha256")
        return path
