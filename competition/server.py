"""``podium server``'s HTTP API: Starlette routes over the door, served by uvicorn.

Participants send their Hugging Face token (``Authorization: Bearer``); workers a worker
token; the organizer the admin token. Every refusal is one JSON document,
``{"error": {"type", "message", "hint", ...}}``, with the status ``competition.errors``
gives it (``Retry-After`` on a 429). Handlers run the door's blocking calls in a thread.

    POST /v1/submissions               a bundle (the request body), as a participant
    GET  /v1/me                        who the token is, their team and quota use
    GET  /v1/requests[?state&team&user]  the caller's team's requests (the admin: all)
    GET  /v1/requests/{id}             one of them, with the report's feedback
    POST /v1/worker/{claim,renew,finish,fail,release}   the queue, for workers
    GET  /v1/worker/bundle/{id}        the bundle of a request the caller holds
    GET  /v1/admin/{counts,eta,workers}; POST /v1/admin/requests/{id}/{retry,cancel,reverify};
    POST /v1/admin/workers/{name}/revoke
"""

from __future__ import annotations

import tempfile
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from competition import admin
from competition.door import Door, participant_view
from competition.errors import NotFound, QuotaExceeded, Refused, WrongChallenge, status_of
from competition.wire import claim_from_dict, claim_to_dict
from podium.errors import BundleError, PodiumError, UsageError
from schemas.check_ids import BUNDLE_TOO_LARGE
from verifier.scale.queue.request import Claim, parse_time

Handler = Callable[[Request], Awaitable[Response]]


def error_response(exc: PodiumError) -> JSONResponse:
    body: dict[str, Any] = {"type": type(exc).__name__, "message": exc.message}
    if exc.hint:
        body["hint"] = exc.hint
    if exc.where:
        body["where"] = exc.where
    headers = {}
    if isinstance(exc, BundleError):
        body["finding_id"] = exc.finding_id
    if isinstance(exc, QuotaExceeded):
        body["retry_after"], body["next_slot"] = exc.retry_after, exc.next_slot
        headers["Retry-After"] = str(exc.retry_after)
    return JSONResponse({"error": body}, status_code=status_of(exc), headers=headers)


def token_of(request: Request) -> str | None:
    scheme, _, value = (request.headers.get("authorization") or "").partition(" ")
    return value.strip() or None if scheme.lower() == "bearer" else None


def guarded(fn: Handler) -> Handler:
    async def run(request: Request) -> Response:
        try:
            return await fn(request)
        except PodiumError as exc:
            return error_response(exc)

    return run


async def _json(request: Request) -> dict[str, Any]:
    try:
        doc = await request.json()
    except ValueError:
        raise UsageError("the request body is not JSON") from None
    if not isinstance(doc, dict):
        raise UsageError("the request body is not a JSON object")
    return doc


async def _receive_bundle(request: Request, limit: int, into: Path) -> Path:
    """The body, written to ``into`` and never more than ``limit`` bytes of it."""
    path = into / "bundle.tar.gz"
    size = 0
    with open(path, "wb") as fh:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise BundleError(
                    f"the bundle is larger than the limit of {limit} bytes",
                    finding_id=BUNDLE_TOO_LARGE,
                    hint="see the challenge's limits.bundle_bytes",
                )
            fh.write(chunk)
    if size == 0:
        raise UsageError("no bundle in the request body", hint="podium submission submit BUNDLE")
    return path


def _at(body: dict[str, Any]) -> datetime | None:
    """The time a worker's conclusion says (a publication hold's grid point), if any."""
    at = body.get("at")
    try:
        return parse_time(at) if isinstance(at, str) else None
    except ValueError:
        raise UsageError(f"not a time: {at!r}") from None


def _door(request: Request) -> Door:
    door: Door = request.app.state.door
    return door


async def submit(request: Request) -> Response:
    door = _door(request)
    who = await run_in_threadpool(door.participant, token_of(request))
    with tempfile.TemporaryDirectory(prefix="podium-door-") as tmp:
        path = await _receive_bundle(request, door.cfg.spec.limits.bundle_bytes, Path(tmp))
        req, charged = await run_in_threadpool(door.submit, who, path)
    body = {"request": participant_view(req), "charged": charged}
    return JSONResponse(body, status_code=201 if charged else 200)


async def me(request: Request) -> Response:
    door = _door(request)
    who = await run_in_threadpool(door.participant, token_of(request))
    return JSONResponse(await run_in_threadpool(admin.quota_of, door, who))


def _viewer(door: Door, request: Request) -> Any:
    token = token_of(request)
    return None if door.is_admin(token) else door.participant(token)


async def list_requests(request: Request) -> Response:
    door = _door(request)

    def run() -> list[dict[str, Any]]:
        who = _viewer(door, request)
        q = request.query_params
        if who is None:
            reqs = door.db.select(state=q.get("state"), team=q.get("team"), user=q.get("user"))
            return [r.summary() | {"submitted_by": r.doc["submitted_by"]} for r in reqs]
        return [participant_view(r) for r in door.db.select(team=who.team)]

    return JSONResponse({"requests": await run_in_threadpool(run)})


async def one_request(request: Request) -> Response:
    door = _door(request)

    def run() -> dict[str, Any]:
        who = _viewer(door, request)
        req = door.visible(who, request.path_params["rid"])
        if who is None:
            return {**req.doc, "report": door.db.report(req.request_id)}
        return participant_view(req, door.report_feedback(req.request_id))

    return JSONResponse({"request": await run_in_threadpool(run)})


# -- workers ------------------------------------------------------------------


def _worker(door: Door, request: Request) -> str:
    name = door.workers.name_of(token_of(request))
    return name


def _own(name: str, claim: Claim) -> Claim:
    if not claim.worker.startswith(f"{name}/"):
        raise Refused(f"the claim on {claim.request_id} is not this worker token's")
    return claim


async def work(request: Request) -> Response:
    door = _door(request)
    action = request.path_params["action"]
    body = await _json(request)

    def run() -> dict[str, Any]:
        name = _worker(door, request)
        door.heard_from(f"{name}/{body.get('worker') or '?'}")
        lease_s = float(body.get("lease_s") or door.cfg.lease_s)
        if action == "claim":
            wanted = body.get("challenge")
            if wanted is not None and wanted != door.cfg.spec.id:
                raise WrongChallenge(
                    f"this server runs challenge {door.cfg.spec.id!r}, not {wanted!r}",
                    hint=f"start the worker with -c {door.cfg.spec.id} (or the locked spec "
                    "of it), or against the server of its own challenge",
                )
            got = door.db.claim(f"{name}/{body.get('worker') or 'worker'}", lease_s)
            return (
                {"request": None}
                if got is None
                else {
                    "request": got[0].doc,
                    "claim": claim_to_dict(got[1]),
                }
            )
        if action == "renew":
            claims = [_own(name, claim_from_dict(c)) for c in body.get("claims") or []]
            renewed, lost = door.db.renew(claims, lease_s)
            return {"renewed": [claim_to_dict(c) for c in renewed], "lost": lost}
        claim = _own(name, claim_from_dict(body.get("claim") or {}))
        if action == "finish":
            done = door.finish(claim, body.get("result") or {}, body.get("report"), _at(body))
            return {"request": done.doc, "state": done.state}
        if action == "fail":
            req = door.db.fail(claim, str(body.get("message") or ""), body.get("result"), _at(body))
            return {"request": req.doc}
        if action == "release":
            return {"request": door.db.release(claim, str(body.get("note") or "")).doc}
        raise NotFound(f"no worker action {action!r}")

    return JSONResponse(await run_in_threadpool(run))


async def bundle(request: Request) -> Response:
    door = _door(request)

    def run() -> bytes:
        name = _worker(door, request)
        req, data = door.db.with_bundle(request.path_params["rid"])
        if not str((req.claim or {}).get("worker", "")).startswith(f"{name}/"):
            raise Refused("a worker fetches only the bundles of requests it holds")
        return data

    data = await run_in_threadpool(run)
    return Response(data, media_type="application/gzip")


# -- the organizer ----------------------------------------------------------------


async def admin_get(request: Request) -> Response:
    door = _door(request)
    door.require_admin(token_of(request))
    what = request.path_params["what"]
    fn = {"counts": admin.counts, "eta": admin.eta, "workers": admin.workers}.get(what)
    if fn is None:
        raise NotFound(f"no admin view {what!r}")
    return JSONResponse(await run_in_threadpool(fn, door))


async def admin_act(request: Request) -> Response:
    door = _door(request)
    door.require_admin(token_of(request))
    rid, action = request.path_params["rid"], request.path_params["action"]
    req = await run_in_threadpool(admin.act, door, rid, action)
    return JSONResponse({"request": req.summary()})


async def revoke(request: Request) -> Response:
    door = _door(request)
    door.require_admin(token_of(request))
    ids = await run_in_threadpool(door.workers.revoke, request.path_params["name"])
    return JSONResponse({"revoked": request.path_params["name"], "released": ids})


async def health(request: Request) -> Response:
    spec = _door(request).cfg.spec
    return JSONResponse({"ok": True, "challenge": spec.id, "time": _now()})


ROUTES = [
    Route("/healthz", guarded(health)),
    Route("/v1/submissions", guarded(submit), methods=["POST"]),
    Route("/v1/me", guarded(me)),
    Route("/v1/requests", guarded(list_requests)),
    Route("/v1/requests/{rid}", guarded(one_request)),
    Route("/v1/worker/bundle/{rid}", guarded(bundle)),
    Route("/v1/worker/{action}", guarded(work), methods=["POST"]),
    Route("/v1/admin/requests/{rid}/{action}", guarded(admin_act), methods=["POST"]),
    Route("/v1/admin/workers/{name}/revoke", guarded(revoke), methods=["POST"]),
    Route("/v1/admin/{what}", guarded(admin_get)),
]


def build_app(door: Door) -> Starlette:
    app = Starlette(routes=ROUTES)
    app.state.door = door
    return app


def _now() -> str:
    return datetime.now().astimezone().isoformat(timespec="seconds")
