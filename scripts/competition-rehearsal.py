"""Rehearse a competition on this machine, with podium's own commands, end to end.

    python scripts/competition-rehearsal.py [--workdir DIR] [--runner local-docker|none]

Two teams (acme: alice; rival: bob and carol) enter the tiny challenge through
`podium server` on SQLite. Their Hugging Face identities come from the test suite's fake
Hub (tests/hubserver.py), whose whoami answers for the tokens tok-alice, tok-bob and
tok-carol; against the real Hub, drop the fake and use real tokens. Each step prints the
command, its exit code and its answer:

1. each team's bundle is accepted;
2. bob submitting acme's bundle gets 403, naming both teams;
3. a truncated bundle is refused with its finding id, and nothing is stored;
4. alice's third bundle goes over a quota of 2 (--quota-user 2): 429 with Retry-After;
5. bob sees only rival's request, and no participant can fetch a bundle;
6. `podium worker --server ... --runner local-docker --once` verifies each request in
   the sandbox and the server publishes the signed rows (needs Docker and the local
   images: scripts/build-images.sh); `--runner none` stops before this step;
7. `podium submission status` shows each submitter their verdict.

Exit 0 when every step answered as expected.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]
ADMIN, WORKER = "rehearsal-admin", "rehearsal-worker"
ROSTER = """contact = "organizers@example.org"

[teams.acme]
members = ["alice"]

[teams.rival]
members = ["bob", "carol"]
"""
failures: list[str] = []


def podium(*args: str, token: str | None = None, env: dict[str, str] | None = None) -> Any:
    """Run ``podium ARGS --json``; print and return (exit code, the JSON answer)."""
    run_env = {**(env or os.environ)}
    if token:
        run_env["HF_TOKEN"] = token
    cmd = [sys.executable, "-c", "from podium.cli.app import main; main()", *args, "--json"]
    done = subprocess.run(cmd, capture_output=True, text=True, env=run_env, timeout=3600)
    shown = " ".join(a if len(a) < 60 else "..." + a[-40:] for a in args)
    print(f"$ podium {shown}  (HF_TOKEN={token})  -> exit {done.returncode}")
    try:
        answer = json.loads(done.stdout)
    except json.JSONDecodeError:
        answer = {"stdout": done.stdout[-400:], "stderr": done.stderr[-400:]}
    print("  " + json.dumps(answer)[:300])
    return done.returncode, answer


def expect(ok: bool, what: str) -> None:
    print(f"  {'ok' if ok else 'FAILED'}: {what}\n")
    if not ok:
        failures.append(what)


def bundle(work: Path, team: str, entry: str) -> Path:
    src = work / f"{team}-{entry}"
    shutil.copytree(
        REPO / "examples" / "tiny-baseline",
        src,
        ignore=shutil.ignore_patterns("manifest.json", "engine-config.json"),
    )
    toml = (src / "podium.toml").read_text()
    toml = toml.replace('team = "podium"', f'team = "{team}"')
    (src / "podium.toml").write_text(toml.replace('"tiny-baseline"', f'"{entry}"'))
    code, out = podium("submission", "package", str(src), "--out", str(work / "dist"), "--no-build")
    if code != 0:
        raise SystemExit(f"could not package {src}: {out}")
    return Path(out["bundle"])


def get(url: str, token: str) -> int:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(req) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def rehearse(work: Path, runner: str) -> None:
    from hubserver import FakeHub

    hub = FakeHub().start()
    hub.users.update({"tok-alice": "alice", "tok-bob": "bob", "tok-carol": "carol"})
    env = {**os.environ, "HF_ENDPOINT": hub.endpoint, "HF_HUB_OFFLINE": "0"}
    env["PYTHONPATH"] = str(REPO)
    (work / "roster.toml").write_text(ROSTER)
    key = work / "organizer.pem"
    podium("keys", "generate", str(key), env=env)
    acme = [bundle(work, "acme", e) for e in ("fast", "faster", "fastest")]
    rival = bundle(work, "rival", "quick")
    truncated = work / "truncated.tar.gz"
    truncated.write_bytes(acme[1].read_bytes()[:4000])
    server = subprocess.Popen(
        [sys.executable, "-c", "from podium.cli.app import main; main()", "server",
         "--db", f"sqlite:///{work / 'competition.db'}", "--roster", str(work / "roster.toml"),
         "--challenge", "tiny", "--store", str(work / "board"), "--key", str(key),
         "--port", "0", "--admin-token", ADMIN, "--worker-token", WORKER,
         "--quota-user", "2", "--json"],
        stdout=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        url = json.loads(server.stdout.readline())["url"]
        print(f"podium server listens at {url} (SQLite in {work})\n")
        steps(url, env, acme, rival, truncated, key, runner)
    finally:
        server.terminate()
        server.wait(timeout=30)
        hub.stop()


def steps(
    url: str, env: dict[str, str], acme: list[Path], rival: Path, truncated: Path, key: Path,
    runner: str,
) -> None:  # fmt: skip
    def submit(path: Path, token: str) -> Any:
        return podium("submission", "submit", str(path), "--server", url, token=token, env=env)

    code, a = submit(acme[0], "tok-alice")
    expect(code == 0 and a["request"]["team"] == "acme", "alice enters acme's bundle")
    code, r = submit(rival, "tok-carol")
    expect(code == 0 and r["request"]["team"] == "rival", "carol enters rival's bundle")
    code, err = submit(acme[0], "tok-bob")
    msg = err.get("error", {}).get("message", "")
    expect(code == 1 and "acme" in msg and "rival" in msg, "bob as acme: 403 naming both")
    code, err = submit(truncated, "tok-carol")
    found = err.get("error", {}).get("finding_id")
    _, listed = podium("competition", "counts", "--server", url, "--admin-token", ADMIN)
    total = sum(listed["counts"].values())
    expect(code == 1 and found == "bundle.corrupt" and total == 2, "truncated: refused, not kept")
    submit(acme[1], "tok-alice")
    code, err = submit(acme[2], "tok-alice")
    expect(code == 3 and err["error"].get("retry_after", 0) > 0, "alice over quota: 429")
    code, mine = podium("submission", "status", "--server", url, token="tok-bob", env=env)
    teams = {x["team"] for x in mine.get("requests", [])}
    expect(code == 0 and teams == {"rival"}, "bob sees only rival's requests")
    status = get(f"{url}/v1/worker/bundle/{a['id']}", "tok-bob")
    expect(status == 401, f"no participant fetches a bundle (HTTP {status})")
    if runner == "none":
        print("--runner none: no worker started")
        return
    for _ in range(3):
        out = str(key.parent / "worker")
        podium("worker", "--server", url, "--worker-token", WORKER, "--runner", runner,
               "--key", str(key), "--once", "--no-hold", "--out", out, env=env)  # fmt: skip
    for rid, token in ((a["id"], "tok-alice"), (r["id"], "tok-carol")):
        code, seen = podium("submission", "status", rid, "--server", url, token=token, env=env)
        req = seen.get("request", {})
        expect(req.get("verdict") == "VERIFIED", f"{token[4:]} sees {req.get('verdict')}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--runner", default="local-docker", help="the worker's runner, or none")
    args = ap.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="podium-rehearsal-"))
    work.mkdir(parents=True, exist_ok=True)
    rehearse(work, args.runner)
    print("every step answered as expected" if not failures else f"FAILED: {failures}")
    raise SystemExit(1 if failures else 0)


if __name__ == "__main__":
    main()
