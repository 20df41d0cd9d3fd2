"""A small in-memory Hugging Face Hub for tests, spoken to by the real ``huggingface_hub``.

It answers the endpoints the client calls to create a dataset repo, commit files
(preupload, then the NDJSON commit with inline base64 files), list a tree (paginated
with ``Link`` headers), read repo info and download files (``resolve`` with
``X-Repo-Commit``, ``ETag`` and ``Content-Length``). Commits are real: each has a sha1
over its parent, tree and message, a branch head moves atomically under a lock, and a
commit whose ``parentCommit`` is no longer the head is answered 412 like the Hub.

Large or binary files take the LFS path (the batch endpoint, a PUT of the bytes, then an
``lfsFile`` commit line) like on the Hub. The few Jobs routes podium's dispatcher uses
are here too (run, inspect, list by label, cancel, logs as server-sent events); a job
does not run by itself: ``on_job`` (called with each new ``FakeJob``) or
``set_job(id, stage, logs)`` from a test decide what it does.

Knobs for tests: ``inject(status, count, endpoint=...)`` answers the next ``count``
matching requests with ``status`` (429 with ``Retry-After``, 409, 500, ...);
``token`` makes every request need ``Authorization: Bearer <token>``; ``page_size``
sets the tree pagination. ``stats`` counts requests per endpoint and how the committed
files were sent (inline "file" lines or "lfsFile" pointers).

Usage::

    with FakeHub() as hub:
        HfApi(endpoint=hub.endpoint).create_repo("org/name", repo_type="dataset")

``huggingface_hub`` refuses all requests when ``HF_HUB_OFFLINE`` was set at import;
``allow_hub_requests(monkeypatch)`` lifts that for one test (and its subprocesses), and
switches off the xet transfers this server does not speak.
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import json
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

DEFAULT_GITATTRIBUTES = b"""\
*.7z filter=lfs diff=lfs merge=lfs -text
*.arrow filter=lfs diff=lfs merge=lfs -text
*.bin filter=lfs diff=lfs merge=lfs -text
*.gz filter=lfs diff=lfs merge=lfs -text
*.parquet filter=lfs diff=lfs merge=lfs -text
*.safetensors filter=lfs diff=lfs merge=lfs -text
*.tar filter=lfs diff=lfs merge=lfs -text
*.zip filter=lfs diff=lfs merge=lfs -text
*.png filter=lfs diff=lfs merge=lfs -text
"""
LFS_SIZE = 10 * 1024 * 1024


def git_blob_oid(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class Commit:
    oid: str
    parent: str | None
    message: str
    files: dict[str, bytes]
    date: float


@dataclass
class Repo:
    repo_type: str
    repo_id: str
    private: bool
    commits: dict[str, Commit] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)

    def resolve(self, rev: str) -> Commit | None:
        oid = self.branches.get(rev, rev)
        return self.commits.get(oid)


@dataclass
class Injection:
    endpoint: str
    status: int
    remaining: int
    retry_after: float | None


@dataclass
class FakeJob:
    """A job as the Jobs API stores it; ``spec`` is the body the client posted."""

    id: str
    namespace: str
    spec: dict[str, Any]
    stage: str = "RUNNING"
    message: str | None = None
    logs: list[str] = field(default_factory=list)
    created: float = field(default_factory=time.time)

    def info(self, endpoint: str) -> dict[str, Any]:
        spec = self.spec
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(self.created))
        return {
            "id": self.id,
            "createdAt": stamp,
            "dockerImage": spec.get("dockerImage"),
            "spaceId": spec.get("spaceId"),
            "command": spec.get("command"),
            "arguments": spec.get("arguments", []),
            "environment": spec.get("environment", {}),
            "secrets": {k: "***" for k in spec.get("secrets", {})},
            "flavor": spec.get("flavor"),
            "labels": spec.get("labels"),
            "volumes": spec.get("volumes"),
            "network": spec.get("network"),
            "status": {"stage": self.stage, "message": self.message},
            "owner": {"id": "0" * 24, "name": self.namespace, "type": "user"},
        }


class FakeHub:
    """The server; ``endpoint`` is its base URL once started."""

    def __init__(self, *, token: str | None = None, page_size: int = 1000):
        self.token = token
        self.page_size = page_size
        self.repos: dict[tuple[str, str], Repo] = {}
        self.lock = threading.Lock()
        self.stats: Counter[str] = Counter()
        self._injections: list[Injection] = []
        self.lfs: dict[str, bytes] = {}
        self.jobs: dict[str, FakeJob] = {}
        self.on_job: Any = None  # callable(FakeJob) run when a job is created
        self.namespace = "podium-test"
        #: token -> username for ``whoami``; empty: every caller is ``namespace``
        self.users: dict[str, str] = {}
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------

    @property
    def endpoint(self) -> str:
        assert self._server is not None, "start the FakeHub first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeHub:
        handler = type("Handler", (_Handler,), {"hub": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- knobs and inspection ----------------------------------------------------

    def inject(
        self,
        status: int,
        count: int = 1,
        *,
        endpoint: str = "commit",
        retry_after: float | None = None,
    ) -> None:
        """Answer the next ``count`` requests to ``endpoint`` with ``status``."""
        with self.lock:
            self._injections.append(Injection(endpoint, status, count, retry_after))

    def _take_injection(self, endpoint: str) -> Injection | None:
        with self.lock:
            for inj in self._injections:
                if inj.endpoint == endpoint and inj.remaining > 0:
                    inj.remaining -= 1
                    self.stats[f"injected:{endpoint}:{inj.status}"] += 1
                    return inj
        return None

    def set_job(self, job_id: str, stage: str, logs: list[str] | None = None) -> None:
        """Move a job to ``stage`` (COMPLETED, ERROR...) and append log lines."""
        with self.lock:
            job = self.jobs[job_id]
            job.stage = stage
            job.logs.extend(logs or [])

    def files(
        self, repo_id: str, *, repo_type: str = "dataset", rev: str = "main"
    ) -> dict[str, bytes]:
        with self.lock:
            commit = self.repos[(repo_type, repo_id)].resolve(rev)
            return dict(commit.files) if commit else {}

    def history(self, repo_id: str, *, repo_type: str = "dataset") -> list[Commit]:
        """Commits from the head back to the first."""
        with self.lock:
            repo = self.repos[(repo_type, repo_id)]
            out, oid = [], repo.branches.get("main")
            while oid:
                out.append(repo.commits[oid])
                oid = repo.commits[oid].parent
            return out

    def put_file(self, repo_id: str, path: str, data: bytes, *, repo_type: str = "dataset") -> str:
        """Commit one file directly (to plant tampered rows in tests)."""
        with self.lock:
            repo = self.repos[(repo_type, repo_id)]
            return self._commit(repo, "main", f"put {path}", {path: data}, set())

    def delete_file(self, repo_id: str, path: str, *, repo_type: str = "dataset") -> str:
        """Commit the removal of one file (a writer deleting a row)."""
        with self.lock:
            repo = self.repos[(repo_type, repo_id)]
            return self._commit(repo, "main", f"delete {path}", {}, {path})

    def reset_branch(self, repo_id: str, oid: str, *, repo_type: str = "dataset") -> None:
        """Point ``main`` back at an older commit (a force-push: a rolled-back store)."""
        with self.lock:
            repo = self.repos[(repo_type, repo_id)]
            assert oid in repo.commits, f"no commit {oid}"
            repo.branches["main"] = oid

    # -- state changes (callers hold the lock) -----------------------------------

    def _create(self, repo_type: str, repo_id: str, private: bool) -> Repo:
        repo = Repo(repo_type, repo_id, private)
        self.repos[(repo_type, repo_id)] = repo
        self._commit(
            repo, "main", "initial commit", {".gitattributes": DEFAULT_GITATTRIBUTES}, set()
        )
        return repo

    def _commit(
        self, repo: Repo, branch: str, message: str, added: dict[str, bytes], deleted: set[str]
    ) -> str:
        parent = repo.branches.get(branch)
        files = dict(repo.commits[parent].files) if parent else {}
        for path in deleted:
            files.pop(path, None)
        files.update(added)
        tree = "".join(f"{p}\0{git_blob_oid(d)}\n" for p, d in sorted(files.items()))
        oid = hashlib.sha1(f"{parent}\n{tree}\n{message}\n{time.time_ns()}".encode()).hexdigest()
        repo.commits[oid] = Commit(oid, parent, message, files, time.time())
        repo.branches[branch] = oid
        return oid

    def upload_mode(self, repo: Repo, rev: str, path: str, size: int, sample: bytes) -> str:
        commit = repo.resolve(rev)
        attrs = (commit.files.get(".gitattributes", b"") if commit else b"").decode(
            errors="replace"
        )
        name = path.rsplit("/", 1)[-1]
        for line in attrs.splitlines():
            parts = line.split()
            lfs = len(parts) >= 2 and "filter=lfs" in parts[1:]
            if lfs and (fnmatch.fnmatch(name, parts[0]) or fnmatch.fnmatch(path, parts[0])):
                return "lfs"
        return "lfs" if size > LFS_SIZE or b"\0" in sample else "regular"


class _Handler(BaseHTTPRequestHandler):
    hub: FakeHub
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    # -- plumbing ----------------------------------------------------------------

    def _send(
        self,
        status: int,
        body: bytes = b"",
        *,
        ctype: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, doc: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(doc).encode(), headers=headers)

    def _error(
        self,
        status: int,
        message: str,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        extra = dict(headers or {})
        if code:
            extra["X-Error-Code"] = code
        extra["X-Error-Message"] = message
        self._json(status, {"error": message}, headers=extra)

    def _body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            out = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return out
                out += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _authorized(self) -> bool:
        if self.hub.token is None:
            return True
        if self.headers.get("Authorization") == f"Bearer {self.hub.token}":
            return True
        self._error(401, "Invalid credentials in Authorization header")
        return False

    def _repo(self, repo_type: str, repo_id: str) -> Repo | None:
        repo = self.hub.repos.get((repo_type, repo_id))
        if repo is None:
            self._error(404, "Repository not found", "RepoNotFound")
        return repo

    def _dispatch(self, method: str) -> None:
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        parts = url.path.strip("/").split("/")
        route = self._route(method, parts)
        if route is None:
            self._body()
            self._error(404, f"no route for {method} {url.path}")
            return
        endpoint, handler, args = route
        self.hub.stats[endpoint] += 1
        if not self._authorized():
            self._body()
            return
        inj = self.hub._take_injection(endpoint)
        if inj is not None:
            self._body()
            headers = {"Retry-After": str(inj.retry_after)} if inj.retry_after is not None else None
            self._error(inj.status, f"injected {inj.status}", headers=headers)
            return
        handler(query, *args)

    def _route(self, method: str, p: list[str]) -> tuple[str, Any, tuple[Any, ...]] | None:
        if method == "POST" and p[:3] == ["api", "repos", "create"]:
            return "create", self._create, ()
        if method == "POST" and p[:2] == ["api", "validate-yaml"]:
            return "validate-yaml", self._validate_yaml, ()
        if method == "GET" and p[:2] == ["api", "whoami-v2"]:
            return "whoami", self._whoami, ()
        if p[:2] == ["api", "jobs"] and len(p) >= 3:
            return self._jobs_route(method, p[2:])
        if method == "POST" and len(p) >= 6 and p[-4:] == ["info", "lfs", "objects", "batch"]:
            return "lfs-batch", self._lfs_batch, ()
        if method == "PUT" and len(p) == 2 and p[0] == "lfs-upload":
            return "lfs-upload", self._lfs_upload, (p[1],)
        if p[:1] == ["api"] and len(p) >= 4 and p[1] in ("datasets", "models", "spaces"):
            rtype, rid = p[1][:-1], f"{p[2]}/{p[3]}"
            rest = p[4:]
            if method == "GET" and not rest:
                return "info", self._info, (rtype, rid, "main")
            if method == "GET" and rest[:1] == ["revision"] and len(rest) >= 2:
                return "info", self._info, (rtype, rid, unquote("/".join(rest[1:])))
            if method == "POST" and rest[:1] == ["preupload"] and len(rest) == 2:
                return "preupload", self._preupload, (rtype, rid, unquote(rest[1]))
            if method == "POST" and rest[:1] == ["commit"] and len(rest) == 2:
                return "commit", self._commit, (rtype, rid, unquote(rest[1]))
            if method == "GET" and rest[:1] == ["tree"] and len(rest) >= 2:
                folder = unquote("/".join(rest[2:])).strip("/")
                return "tree", self._tree, (rtype, rid, unquote(rest[1]), folder)
        resolve = len(p) >= 6 and p[0] in ("datasets", "spaces") and p[3] == "resolve"
        if method in ("GET", "HEAD") and resolve:
            rtype, rid = p[0][:-1], f"{p[1]}/{p[2]}"
            return "resolve", self._resolve, (rtype, rid, unquote(p[4]), unquote("/".join(p[5:])))
        return None

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_HEAD(self) -> None:
        self._dispatch("HEAD")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    # -- endpoints ---------------------------------------------------------------

    def _create(self, query: dict[str, str]) -> None:
        doc = json.loads(self._body() or b"{}")
        rtype = doc.get("type") or "model"
        rid = f"{doc.get('organization') or 'user'}/{doc['name']}"
        prefix = "" if rtype == "model" else f"{rtype}s/"
        url = f"{self.hub.endpoint}/{prefix}{rid}"
        with self.hub.lock:
            exists = (rtype, rid) in self.hub.repos
            if not exists:
                self.hub._create(rtype, rid, doc.get("visibility") == "private")
        if exists:  # the Hub names the existing repo in its 409 answer
            msg = f"You already created this {rtype} repo"
            self._json(409, {"error": msg, "url": url}, headers={"X-Error-Message": msg})
            return
        self._json(200, {"url": url, "name": rid})

    def _validate_yaml(self, query: dict[str, str]) -> None:
        self._body()
        self._json(200, {"errors": [], "warnings": []})

    def _at(self, rtype: str, rid: str, rev: str) -> tuple[Repo, Commit] | None:
        """The repo and the commit ``rev`` names (under the lock); None once answered 404."""
        repo = self._repo(rtype, rid)
        if repo is None:
            return None
        commit = repo.resolve(rev)
        if commit is None:
            self._error(404, f"Invalid rev id: {rev}", "RevisionNotFound")
            return None
        return repo, commit

    def _info(self, query: dict[str, str], rtype: str, rid: str, rev: str) -> None:
        with self.hub.lock:
            found = self._at(rtype, rid, rev)
            if found is None:
                return
            repo, commit = found
            doc = {
                "_id": hashlib.sha1(rid.encode()).hexdigest()[:24],
                "id": rid,
                "author": rid.split("/")[0],
                "sha": commit.oid,
                "private": repo.private,
                "disabled": False,
                "gated": False,
                "downloads": 0,
                "likes": 0,
                "tags": [],
                "lastModified": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(commit.date)),
                "siblings": [{"rfilename": p} for p in sorted(commit.files)],
            }
        self._json(200, doc)

    def _preupload(self, query: dict[str, str], rtype: str, rid: str, rev: str) -> None:
        doc = json.loads(self._body() or b"{}")
        with self.hub.lock:
            repo = self._repo(rtype, rid)
            if repo is None:
                return
            commit = repo.resolve(rev)
            out = []
            for f in doc.get("files", []):
                sample = base64.b64decode(f.get("sample", ""))
                existing = commit.files.get(f["path"]) if commit else None
                out.append(
                    {
                        "path": f["path"],
                        "uploadMode": self.hub.upload_mode(
                            repo, rev, f["path"], int(f["size"]), sample
                        ),
                        "shouldIgnore": False,
                        "oid": git_blob_oid(existing) if existing is not None else None,
                    }
                )
        self._json(200, {"files": out, "commitOid": commit.oid if commit else None})

    def _commit(self, query: dict[str, str], rtype: str, rid: str, rev: str) -> None:
        lines = [json.loads(line) for line in self._body().splitlines() if line.strip()]
        header = next((x["value"] for x in lines if x.get("key") == "header"), None)
        if header is None or not header.get("summary"):
            self._error(400, "a commit needs a header line with a summary")
            return
        added: dict[str, bytes] = {}
        deleted: set[str] = set()
        for item in lines:
            key, value = item.get("key"), item.get("value") or {}
            if key == "file":
                added[value["path"]] = base64.b64decode(value["content"])
                self.hub.stats["commit-file:inline"] += 1
            elif key == "lfsFile":
                self.hub.stats["commit-file:lfs"] += 1
                with self.hub.lock:
                    data = self.hub.lfs.get(value["oid"])
                if data is None:
                    self._error(422, f"LFS object {value['oid']} was never uploaded")
                    return
                added[value["path"]] = data
            elif key in ("deletedFile", "deletedFolder"):
                deleted.add(value["path"])
        with self.hub.lock:
            repo = self._repo(rtype, rid)
            if repo is None:
                return
            if rev not in repo.branches:
                self._error(404, f"Invalid rev id: {rev}", "RevisionNotFound")
                return
            parent = header.get("parentCommit")
            if parent is not None and parent != repo.branches[rev]:
                self._error(412, "A commit has happened since. Please refresh and try again.")
                return
            oid = self.hub._commit(repo, rev, header["summary"], added, deleted)
        prefix = "" if rtype == "model" else f"{rtype}s/"
        self._json(
            200,
            {
                "success": True,
                "commitOid": oid,
                "commitUrl": f"{self.hub.endpoint}/{prefix}{rid}/commit/{oid}",
            },
        )

    def _tree(self, query: dict[str, str], rtype: str, rid: str, rev: str, folder: str) -> None:
        recursive = query.get("recursive", "false").lower() == "true"
        with self.hub.lock:
            found = self._at(rtype, rid, rev)
            if found is None:
                return
            commit = found[1]
            entries = _tree_entries(commit.files, folder, recursive)
        if entries is None:
            self._error(404, f"{folder} does not exist on {rev}", "EntryNotFound")
            return
        start = int(query.get("cursor", "0"))
        page = entries[start : start + self.hub.page_size]
        headers = {}
        if start + self.hub.page_size < len(entries):
            url = urlsplit(self.path)
            nq = {**query, "cursor": str(start + self.hub.page_size)}
            nxt = f"{self.hub.endpoint}{url.path}?" + "&".join(
                f"{k}={quote(v)}" for k, v in nq.items()
            )
            headers["Link"] = f'<{nxt}>; rel="next"'
        self._json(200, page, headers=headers)

    def _resolve(self, query: dict[str, str], rtype: str, rid: str, rev: str, path: str) -> None:
        with self.hub.lock:
            found = self._at(rtype, rid, rev)
            if found is None:
                return
            commit = found[1]
            data = commit.files.get(path)
            oid = commit.oid
        if data is None:
            self._error(404, "Entry not found", "EntryNotFound")
            return
        self._send(
            200,
            data,
            ctype="application/octet-stream",
            headers={
                "X-Repo-Commit": oid,
                "ETag": f'"{git_blob_oid(data)}"',
                "Accept-Ranges": "none",
            },
        )

    # -- LFS ----------------------------------------------------------------------

    def _lfs_batch(self, query: dict[str, str]) -> None:
        doc = json.loads(self._body() or b"{}")
        objects = []
        for obj in doc.get("objects", []):
            item: dict[str, Any] = {"oid": obj["oid"], "size": obj["size"]}
            with self.hub.lock:
                stored = obj["oid"] in self.hub.lfs
            if not stored:
                href = f"{self.hub.endpoint}/lfs-upload/{obj['oid']}"
                item["actions"] = {"upload": {"href": href}}
            objects.append(item)
        self._json(200, {"transfer": "basic", "objects": objects})

    def _lfs_upload(self, query: dict[str, str], oid: str) -> None:
        data = self._body()
        if hashlib.sha256(data).hexdigest() != oid:
            self._error(400, "the uploaded bytes do not match the oid")
            return
        with self.hub.lock:
            self.hub.lfs[oid] = data
        self._send(200, b"")

    # -- Jobs ---------------------------------------------------------------------

    def _jobs_route(self, method: str, rest: list[str]) -> tuple[str, Any, tuple[Any, ...]] | None:
        ns = rest[0]
        if method == "POST" and len(rest) == 1:
            return "jobs-run", self._job_run, (ns,)
        if method == "GET" and len(rest) == 1:
            return "jobs-list", self._job_list, (ns,)
        if method == "GET" and len(rest) == 2:
            return "jobs-inspect", self._job_inspect, (ns, rest[1])
        if method == "POST" and len(rest) == 3 and rest[2] == "cancel":
            return "jobs-cancel", self._job_cancel, (ns, rest[1])
        if method == "GET" and len(rest) == 3 and rest[2] == "logs":
            return "jobs-logs", self._job_logs, (ns, rest[1])
        return None

    def _whoami(self, query: dict[str, str]) -> None:
        if not self.hub.users:
            self._json(200, {"type": "user", "name": self.hub.namespace, "orgs": []})
            return
        scheme, _, token = (self.headers.get("Authorization") or "").partition(" ")
        name = self.hub.users.get(token) if scheme == "Bearer" else None
        if name is None:
            self._error(401, "Invalid credentials in Authorization header")
            return
        self._json(200, {"type": "user", "name": name, "orgs": []})

    def _job(self, ns: str, job_id: str) -> FakeJob | None:
        job = self.hub.jobs.get(job_id)
        if job is None or job.namespace != ns:
            self._error(404, f"Job {job_id} not found")
            return None
        return job

    def _job_run(self, query: dict[str, str], ns: str) -> None:
        spec = json.loads(self._body() or b"{}")
        if not spec.get("dockerImage") and not spec.get("spaceId"):
            self._error(400, "a job needs an image")
            return
        with self.hub.lock:
            job_id = hashlib.sha1(f"{time.time_ns()}-{len(self.hub.jobs)}".encode()).hexdigest()
            job = FakeJob(job_id[:24], ns, spec)
            self.hub.jobs[job.id] = job
            doc = job.info(self.hub.endpoint)
        if self.hub.on_job is not None:
            self.hub.on_job(job)
        self._json(200, doc)

    def _job_list(self, query: dict[str, str], ns: str) -> None:
        raw = parse_qs(urlsplit(self.path).query)
        wanted = dict(x.split("=", 1) for x in raw.get("label", []))
        stages = set(raw.get("stage", []))
        with self.hub.lock:
            out = [
                j.info(self.hub.endpoint)
                for j in self.hub.jobs.values()
                if j.namespace == ns
                and all((j.spec.get("labels") or {}).get(k) == v for k, v in wanted.items())
                and (not stages or j.stage in stages)
            ]
        self._json(200, out)

    def _job_inspect(self, query: dict[str, str], ns: str, job_id: str) -> None:
        with self.hub.lock:
            job = self._job(ns, job_id)
            doc = job.info(self.hub.endpoint) if job else None
        if doc is not None:
            self._json(200, doc)

    def _job_cancel(self, query: dict[str, str], ns: str, job_id: str) -> None:
        self._body()
        with self.hub.lock:
            job = self._job(ns, job_id)
            if job is None:
                return
            if job.stage in ("SCHEDULING", "RUNNING"):
                job.stage = "CANCELED"
        self._send(200, b"")

    def _job_logs(self, query: dict[str, str], ns: str, job_id: str) -> None:
        with self.hub.lock:
            job = self._job(ns, job_id)
            if job is None:
                return
            lines = list(job.logs)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(time.time() - 5))
        body = "".join(
            "data: " + json.dumps({"timestamp": stamp, "data": line}) + "\n\n" for line in lines
        )
        self._send(200, body.encode(), ctype="text/event-stream")


def _tree_entries(
    files: dict[str, bytes], folder: str, recursive: bool
) -> list[dict[str, Any]] | None:
    prefix = f"{folder}/" if folder else ""
    if folder and not any(p.startswith(prefix) for p in files):
        return None
    dirs: set[str] = set()
    out: list[dict[str, Any]] = []
    for path in sorted(files):
        if not path.startswith(prefix):
            continue
        rest = path[len(prefix) :].split("/")
        for i in range(1, len(rest)):
            if i > 1 and not recursive:
                break
            dirs.add(prefix + "/".join(rest[:i]))
        if recursive or len(rest) == 1:
            data = files[path]
            out.append({"type": "file", "oid": git_blob_oid(data), "size": len(data), "path": path})
    out += [
        {"type": "directory", "oid": hashlib.sha1(d.encode()).hexdigest(), "size": 0, "path": d}
        for d in sorted(dirs)
    ]
    return out


def allow_hub_requests(monkeypatch: Any) -> None:
    """Let ``huggingface_hub`` talk to a local fake Hub in this test and its children.

    The fake speaks the plain HTTP upload paths only (inline files and LFS), not xet, so
    xet is switched off here, for this test, in this process (``constants``, which the
    client reads at call time) and in its children (the variable, read at import).
    """
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", True)
