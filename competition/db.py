"""The queue in a database: SQLite by default, PostgreSQL for a fleet.

One row per request holds the request's document (``schemas/json/queue-request.schema.json``,
the same document a folder or Hub queue keeps) and the columns a query needs (state,
team, submitter, lease). Every change is the queue's own pure transition
(``verifier.scale.queue.request``) applied inside one transaction to rows read ``FOR
UPDATE``; a claim takes the oldest claimable row with ``FOR UPDATE SKIP LOCKED``, so on
PostgreSQL a hundred workers claim at once without waiting on each other. SQLite has no
row locks: every write transaction starts ``BEGIN IMMEDIATE`` and writers take turns.

The bundles, the quota ledger (one row per charged submission), the signed reports and
the worker tokens (their sha256 only) live in the same database, so a restart keeps
everything and a submission is stored whole or not at all.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from competition.errors import DatabaseUnavailable
from podium.errors import StoreError, UsageError
from verifier.scale.queue import request as rq
from verifier.scale.queue.request import Claim, QueueRequest, parse_time
from verifier.scale.queue.stores.base import BundleToSubmit, Change, QueueStore

meta = sa.MetaData()
requests_t = sa.Table(
    "requests",
    meta,
    sa.Column("request_id", sa.String(24), primary_key=True),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("team", sa.String(64), nullable=False, index=True),
    sa.Column("challenge", sa.String(64), nullable=False),
    sa.Column("submitted_by", sa.String(128), nullable=False),
    sa.Column("submitted_at", sa.String(40), nullable=False),
    sa.Column("lease_until", sa.Float, nullable=True),
    sa.Column("worker", sa.String(256), nullable=True),
    sa.Column("doc", sa.Text, nullable=False),
    sa.Index("requests_by_state", "state", "submitted_at", "request_id"),
)
bundles_t = sa.Table(
    "bundles",
    meta,
    sa.Column("sha256", sa.String(64), primary_key=True),
    sa.Column("data", sa.LargeBinary, nullable=False),
)
charges_t = sa.Table(
    "charges",
    meta,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("username", sa.String(128), nullable=False, index=True),
    sa.Column("team", sa.String(64), nullable=False, index=True),
    sa.Column("request_id", sa.String(24), nullable=False),
    sa.Column("at", sa.Float, nullable=False),
)
teams_t = sa.Table("teams", meta, sa.Column("name", sa.String(64), primary_key=True))
reports_t = sa.Table(
    "reports",
    meta,
    sa.Column("request_id", sa.String(24), primary_key=True),
    sa.Column("report", sa.Text, nullable=False),
)
workers_t = sa.Table(
    "worker_tokens",
    meta,
    sa.Column("token_sha256", sa.String(64), primary_key=True),
    sa.Column("name", sa.String(64), nullable=False, unique=True),
    sa.Column("revoked_at", sa.Float, nullable=True),
)


def engine_for(url: str) -> sa.Engine:
    """An engine for ``sqlite:///PATH`` or ``postgresql://...`` (psycopg 3)."""
    if url.startswith("sqlite:"):
        engine = sa.create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})

        @sa.event.listens_for(engine, "connect")
        def _connect(dbapi: Any, _record: Any) -> None:
            dbapi.isolation_level = None  # transactions are begun below, not by the driver
            dbapi.execute("PRAGMA journal_mode=WAL")
            # in WAL mode: a commit survives the server's crash; an OS crash may lose the
            # last commits (never half of one): 11 ms a commit here with FULL, under 1 ms
            dbapi.execute("PRAGMA synchronous=NORMAL")
            dbapi.execute("PRAGMA busy_timeout=30000")

        @sa.event.listens_for(engine, "begin")
        def _begin(conn: sa.Connection) -> None:
            conn.exec_driver_sql("BEGIN IMMEDIATE")

        return engine
    if url.startswith(("postgresql:", "postgres:", "postgresql+psycopg:")):
        tail = url.split(":", 1)[1]
        return sa.create_engine(
            f"postgresql+psycopg:{tail}", pool_size=20, max_overflow=100, pool_pre_ping=True
        )
    raise UsageError(
        f"not a database URL: {url!r}",
        hint="use sqlite:///PATH (embedded) or postgresql://USER@HOST:PORT/DB",
    )


def _req(doc_text: str) -> QueueRequest:
    return QueueRequest(json.loads(doc_text))  # validated when it was written


def _columns(req: QueueRequest) -> dict[str, Any]:
    claim = req.claim
    return {
        "request_id": req.request_id,
        "state": req.state,
        "team": req.doc["team"],
        "challenge": req.doc["challenge"],
        "submitted_by": req.doc["submitted_by"],
        "submitted_at": req.doc["submitted_at"],
        "lease_until": parse_time(claim["lease_until"]).timestamp() if claim else None,
        "worker": claim["worker"] if claim else None,
        "doc": req.to_bytes().decode("utf-8"),
    }


class DbQueue(QueueStore):
    """The queue's operations over one database; safe for many threads and processes."""

    def __init__(self, url: str):
        self.url = url
        self.engine = engine_for(url)
        with self.tx() as conn:
            meta.create_all(conn)

    def close(self) -> None:
        self.engine.dispose()

    @contextmanager
    def tx(self) -> Iterator[sa.Connection]:
        """One transaction; a database that cannot be reached is ``DatabaseUnavailable``
        and whatever the transaction began is rolled back."""
        try:
            with self.engine.begin() as conn:
                yield conn
        except (sa_exc.OperationalError, sa_exc.InterfaceError) as exc:
            raise DatabaseUnavailable(
                f"the database is unavailable: {str(exc.orig or exc).splitlines()[0]}",
                where=self.engine.url.render_as_string(hide_password=True),
                hint="nothing was written; try again once the database is back",
            ) from exc

    # -- the QueueStore primitives -------------------------------------------------

    def _locked(self, conn: sa.Connection, ids: Sequence[str]) -> dict[str, QueueRequest]:
        rows = conn.execute(
            sa.select(requests_t.c.request_id, requests_t.c.doc)
            .where(requests_t.c.request_id.in_(list(ids)))
            .with_for_update()
        )
        return {r.request_id: _req(r.doc) for r in rows}

    def _write(self, conn: sa.Connection, reqs: Sequence[QueueRequest], fresh: set[str]) -> None:
        for req in reqs:
            cols = _columns(req)
            if req.request_id in fresh:
                conn.execute(requests_t.insert().values(**cols))
            else:
                conn.execute(
                    requests_t.update()
                    .where(requests_t.c.request_id == req.request_id)
                    .values(**cols)
                )

    def _change(self, ids: Sequence[str], change: Change, *, message: str) -> list[QueueRequest]:
        with self.tx() as conn:
            found = self._locked(conn, ids)
            out = change([found.get(i) for i in ids])
            self._write(conn, out, {r.request_id for r in out} - set(found))
            return out

    def _candidates(self) -> list[str]:
        with self.tx() as conn:
            rows = conn.execute(
                sa.select(requests_t.c.request_id)
                .where(requests_t.c.state.in_([rq.PENDING, rq.RUNNING]))
                .order_by(requests_t.c.submitted_at, requests_t.c.request_id)
            )
            return [r.request_id for r in rows]

    def _put_bundles(self, bundles: list[BundleToSubmit], docs: list[QueueRequest]) -> None:
        with self.tx() as conn:
            for b in bundles:
                self.put_bundle(conn, b.sha256, b.path.read_bytes())
            have = self._locked(conn, [d.request_id for d in docs])
            self._write(conn, [d for d in docs if d.request_id not in have], set(docs_ids(docs)))

    def put_bundle(self, conn: sa.Connection, sha256: str, data: bytes) -> None:
        exists = conn.execute(sa.select(bundles_t.c.sha256).where(bundles_t.c.sha256 == sha256))
        if exists.first() is None:
            conn.execute(bundles_t.insert().values(sha256=sha256, data=data))

    def list_requests(self, state: str | None = None) -> list[QueueRequest]:
        return self.select(state=state)

    def select(
        self,
        *,
        state: str | None = None,
        team: str | None = None,
        user: str | None = None,
        limit: int | None = None,
    ) -> list[QueueRequest]:
        q = sa.select(requests_t.c.doc).order_by(requests_t.c.submitted_at, requests_t.c.request_id)
        if state:
            q = q.where(requests_t.c.state == state.upper())
        if team:
            q = q.where(requests_t.c.team == team)
        if user:
            q = q.where(requests_t.c.submitted_by == user)
        if limit:
            q = q.limit(limit)
        with self.tx() as conn:
            return [_req(r.doc) for r in conn.execute(q)]

    def get(self, request_id: str) -> QueueRequest:
        with self.tx() as conn:
            row = conn.execute(
                sa.select(requests_t.c.doc).where(requests_t.c.request_id == request_id)
            ).first()
        if row is None:
            raise UsageError(f"no request {request_id!r}", where=request_id)
        return _req(row.doc)

    def bundle_bytes(self, sha256: str) -> bytes:
        with self.tx() as conn:
            row = conn.execute(sa.select(bundles_t.c.data).where(bundles_t.c.sha256 == sha256))
            found = row.first()
        if found is None:
            raise StoreError(f"no stored bundle {sha256}", where=sha256)
        return bytes(found.data)

    def with_bundle(self, request_id: str) -> tuple[QueueRequest, bytes]:
        """A request and its bundle's bytes, read in one transaction."""
        with self.tx() as conn:
            row = conn.execute(
                sa.select(requests_t.c.doc).where(requests_t.c.request_id == request_id)
            ).first()
            if row is None:
                raise UsageError(f"no request {request_id!r}", where=request_id)
            req = _req(row.doc)
            data = conn.execute(
                sa.select(bundles_t.c.data).where(bundles_t.c.sha256 == req.bundle_sha256)
            ).scalar_one()
        return req, bytes(data)

    def _download_bundle(self, req: QueueRequest, dest: Path) -> Path:
        target = dest / f"{req.bundle_sha256}.tar.gz"
        target.write_bytes(self.bundle_bytes(req.bundle_sha256))
        return target

    # -- a claim, with row locks that skip what another worker holds ----------------

    def claim(
        self, worker: str, lease_s: float, challenge: str | None = None
    ) -> tuple[QueueRequest, Claim] | None:
        at = rq.now()
        c = requests_t.c
        due = sa.or_(
            c.state == rq.PENDING, sa.and_(c.state == rq.RUNNING, c.lease_until <= at.timestamp())
        )
        of = [c.challenge == challenge] if challenge is not None else []
        with self.tx() as conn:
            row = conn.execute(
                sa.select(c.doc)
                .where(c.state.in_([rq.PENDING, rq.RUNNING]), due, *of)
                .order_by(c.submitted_at, c.request_id)
                .limit(1)
                .with_for_update(skip_locked=True)
            ).first()
            if row is None:
                return None
            new, claim = rq.claimed(_req(row.doc), worker, lease_s, at)
            self._write(conn, [new], set())
            return new, claim

    # -- what the door adds -------------------------------------------------------

    def counts(self) -> dict[str, int]:
        with self.tx() as conn:
            rows = conn.execute(
                sa.select(requests_t.c.state, sa.func.count()).group_by(requests_t.c.state)
            )
            found = {r[0]: int(r[1]) for r in rows}
        return {s: found.get(s, 0) for s in rq.STATES}

    def charges(self, conn: sa.Connection, column: str, value: str, since: float) -> list[float]:
        col = charges_t.c[column]
        rows = conn.execute(sa.select(charges_t.c.at).where(col == value, charges_t.c.at > since))
        return [float(r.at) for r in rows]

    def lock_team(self, conn: sa.Connection, team: str) -> None:
        """Serialize one team's submissions (its quota is counted, then charged): the
        team's row, made if missing (by whichever submission comes first), locked."""
        if self.engine.dialect.name == "postgresql":
            from sqlalchemy.dialects.postgresql import insert as upsert
        else:
            from sqlalchemy.dialects.sqlite import insert as upsert  # type: ignore[assignment]
        conn.execute(upsert(teams_t).values(name=team).on_conflict_do_nothing())
        conn.execute(sa.select(teams_t.c.name).where(teams_t.c.name == team).with_for_update())

    def save_report(self, conn: sa.Connection, request_id: str, report: dict[str, Any]) -> None:
        conn.execute(reports_t.delete().where(reports_t.c.request_id == request_id))
        conn.execute(reports_t.insert().values(request_id=request_id, report=json.dumps(report)))

    def report(self, request_id: str) -> dict[str, Any] | None:
        with self.tx() as conn:
            row = conn.execute(
                sa.select(reports_t.c.report).where(reports_t.c.request_id == request_id)
            ).first()
        return json.loads(row.report) if row else None

    def changed(self, request_id: str, fn: Callable[[QueueRequest], QueueRequest]) -> QueueRequest:
        """Apply one transition to one request (an organizer's retry, cancel, requeue)."""

        def apply(found: list[QueueRequest | None]) -> list[QueueRequest]:
            if found[0] is None:
                raise UsageError(f"no request {request_id!r}", where=request_id)
            return [fn(found[0])]

        return self._change([request_id], apply, message="change")[0]


def docs_ids(docs: Sequence[QueueRequest]) -> list[str]:
    return [d.request_id for d in docs]


def now_s() -> float:
    return time.time()
