"""``podium worker`` and ``podium dispatch``: the two ways to drain the verification queue.

A worker verifies each request it claims on this machine; a dispatcher hands each to a
jobs service. What they work from (the queue, the volumes, the jobs backend) is opened by
``verifier.scale.resources``; the hidden ``podium harness`` that a harness job runs is
``harness_cmd``.
"""

from __future__ import annotations

import dataclasses
import enum
from pathlib import Path
from typing import Annotated, Any

import typer

from podium.cli.options import (
    ChallengeOpt,
    HeldoutOpt,
    JsonOpt,
    KeyOpt,
    LocalRunner,
    LocalRunnerOpt,
    QueueOpt,
    load_named_challenge,
    out_option,
    require_heldout,
    require_signing_key,
)
from podium.cli.output import console, emit, json_mode, set_json
from podium.errors import EXIT_CANNOT_EVALUATE, EXIT_OK

WORKER_HELP = """\
Claim a request from the queue, verify it, publish the record, mark the request, repeat.
A lease (renewed in the background) makes a crashed worker's request come back; the
first SIGINT/SIGTERM finishes the current request then stops, a second releases it.
A run's end shows only at the 30-minute grid point after its report's finished: the
worker holds the record and the mark until then (docs/scale.md, "The hold").

Examples:

  podium worker --queue hf://datasets/org/podium-queue --store hf://datasets/org/board
  --key keys/organizer.pem --heldout /secure/heldout

  podium worker --queue ./queue --store ./leaderboard-data --key k.pem --once

  podium worker -c fast-gemma.locked.json --queue hf://datasets/org/podium-queue
  --store hf://datasets/org/board --key keys/organizer.pem --heldout /secure/heldout

  podium worker --server https://org-podium.hf.space --worker-token "$W" --runner
  local-docker --key organizer.pem --heldout /secure/heldout

With --challenge (a name, a spec file, a URL or hf://...), the worker claims requests of
that challenge only and verifies them against that spec (without it, any request, each
against podium's shipped spec of its id); a spec that requires isolation must be locked
(podium challenge lock) and pin the key the worker signs with, or the worker refuses to
start, naming each part to lock.
"""


DISPATCH_HELP = """\
Claim requests and verify each on a jobs service: a server job (the participant's
rebuilt image on --flavor, no secrets) and a harness job (podium's image on a CPU
flavour with the held-out set and the signing key) in one private network group.
Each request's end is held to the 30-minute grid point after its report's finished.

Which rows it can make VERIFIED: a jobs service has no egress switch, so the server job
is not sandboxed, and a challenge that requires integrity.isolation gets UNOFFICIAL rows
from either backend (--backend local is a rehearsal of the same jobs on Docker here).
{verified}
Docs: docs/scale.md, "Which runner can make a row VERIFIED".

Examples:

  podium dispatch --queue hf://datasets/org/podium-queue --store hf://datasets/org/board
  --key k.pem --flavor a10g-small --max-concurrent 4 --namespace org
  --image-repo registry.example.org/podium-entries --heldout hf://datasets/org/heldout

  podium dispatch --backend local --queue ./queue --store ./board --key k.pem --once

With --challenge, only requests of that challenge are claimed, verified against that
spec; the harness job loads it by the same reference, so a spec of the organizer's own is
given as a URL or hf://datasets/ORG/NAME/challenge.json (a shipped name works too).
"""


def verified_paths() -> str:
    """Which of the shipped challenges dispatch can make VERIFIED, from their specs."""
    from schemas.challenge import list_challenges, load_challenge

    sandboxed = [n for n in list_challenges() if load_challenge(n).check("isolation")["enabled"]]
    others = [n for n in list_challenges() if n not in sandboxed]
    lines = []
    if sandboxed:
        lines.append(
            f"Shipped challenges that require it: {', '.join(sandboxed)}; their VERIFIED rows "
            "come only from `podium worker --runner local-docker` on hosts with Docker and the "
            "challenge's GPU, claiming from the same queue."
        )
    if others:
        lines.append(
            f"Shipped challenges that do not: {', '.join(others)}; dispatch can make their "
            "rows VERIFIED on the challenge's hardware."
        )
    return "\n".join(lines)


class Backend(enum.StrEnum):
    """Where ``podium dispatch`` starts its jobs."""

    hf = "hf"
    local = "local"


LeaseOpt = Annotated[float, typer.Option(help="Lease in seconds; renewed every third of it.")]

PublishOpt = Annotated[
    str | None,
    typer.Option("--store", "-s", help="Publish to this store: ./dir or hf://datasets/ORG/NAME."),
]


def _say(line: str) -> None:
    if not json_mode():
        console(stderr=True).print(line, markup=False, highlight=False)


def _summary(handled: list[Any]) -> int:
    rows = [h.to_dict() for h in handled]
    emit({"handled": rows}, lambda con: con.print(f"handled {len(rows)} request(s)"))
    return EXIT_CANNOT_EVALUATE if any(h.state == "FAILED" for h in handled) else EXIT_OK


def worker_cmd(
    queue: QueueOpt = None,
    challenge: ChallengeOpt = None,
    store: PublishOpt = None,
    key: KeyOpt = None,
    runner: LocalRunnerOpt = LocalRunner.local_docker,
    heldout: HeldoutOpt = None,
    out: Annotated[Path, out_option("Reports and logs")] = Path("out/worker"),
    lease: LeaseOpt = 900.0,
    poll: Annotated[float, typer.Option(help="Seconds between looks at an empty queue.")] = 30.0,
    once: Annotated[bool, typer.Option("--once", help="At most one request.")] = False,
    no_hold: Annotated[
        bool,
        typer.Option(
            "--no-hold",
            help="Publish and mark as soon as a run ends (a rehearsal, a private board): "
            "the run's length then shows in the queue's history and the board's times.",
        ),
    ] = False,
    server: Annotated[
        str | None,
        typer.Option(help="Claim from a competition server (podium server) instead of --queue."),
    ] = None,
    worker_token: Annotated[
        str | None,
        typer.Option(help="The server's worker token (default: $PODIUM_WORKER_TOKEN)."),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    from leaderboard.stores import open_store
    from verifier.lock import require_locked
    from verifier.runners.factory import reference_runner
    from verifier.scale.resources import spec_source
    from verifier.scale.worker import Worker, WorkerConfig, sandboxed_runner

    set_json(json_out)
    new_runner = sandboxed_runner(runner.value)
    signer = require_signing_key(key)
    spec = load_named_challenge(challenge, "--challenge") if challenge else None
    if spec is not None:
        require_locked(spec, signer=signer)
    cfg = WorkerConfig(
        queue=work_queue(queue, server, worker_token, store),
        store=open_store(store) if store else None,
        key=signer,
        spec_for=spec_source(spec),
        challenge=spec.id if spec else None,
        runner=new_runner,
        out_dir=out,
        heldout=require_heldout(heldout),
        reference=reference_runner,
        lease_s=lease,
        poll_s=poll,
    )
    if no_hold:
        cfg = dataclasses.replace(cfg, hold=None)
    handled = Worker(cfg, say=_say).run(once=once, install_signals=True)
    raise typer.Exit(_summary(handled))


def work_queue(queue: str | None, server: str | None, token: str | None, store: str | None) -> Any:
    """The queue a worker drains: a folder or Hub queue, or a competition server (which
    publishes the rows itself, with the team and user it authenticated)."""
    import os

    from podium.errors import UsageError
    from verifier.scale.resources import existing_queue

    if server is None:
        return existing_queue(queue)
    from competition.client import ServerQueue
    from verifier.scale.queue.stores.base import default_identity

    token = token or os.environ.get("PODIUM_WORKER_TOKEN")
    if not token:
        raise UsageError("--server needs a worker token", hint="pass --worker-token W")
    if queue or store:
        raise UsageError(
            "--server replaces --queue and --store",
            hint="the server holds the queue and publishes to its own --store",
        )
    return ServerQueue(server, token, worker=default_identity())


def dispatch_cmd(
    queue: QueueOpt = None,
    challenge: ChallengeOpt = None,
    store: PublishOpt = None,
    key: KeyOpt = None,
    backend: Annotated[
        Backend,
        typer.Option(
            help="hf: Hugging Face Jobs; local: a rehearsal on Docker here (neither "
            "sandboxes the engine: see above)."
        ),
    ] = Backend.hf,
    flavor: Annotated[str, typer.Option(help="The server job's flavour.")] = "a10g-small",
    harness_flavor: Annotated[str, typer.Option(help="The harness job's.")] = "cpu-upgrade",
    harness_image: Annotated[str | None, typer.Option(help="podium's image.")] = None,
    image_repo: Annotated[
        str | None, typer.Option(help="Registry repo the rebuilt images are pushed to (hf).")
    ] = None,
    namespace: Annotated[str | None, typer.Option(help="Jobs namespace (hf).")] = None,
    heldout: Annotated[
        str | None, typer.Option(help="Held-out set: hf://datasets/ORG/NAME (private) or dir.")
    ] = None,
    max_concurrent: Annotated[int, typer.Option(help="Job pairs in flight.")] = 2,
    out: Annotated[Path, out_option("Reports and job logs")] = Path("out/dispatch"),
    lease: LeaseOpt = 900.0,
    once: Annotated[bool, typer.Option("--once", help="Drain the queue, then stop.")] = False,
    json_out: JsonOpt = False,
) -> None:
    from leaderboard.stores import open_store
    from verifier.scale import resources
    from verifier.scale.dispatch.dispatcher import DispatchConfig, Dispatcher

    set_json(json_out)
    spec = load_named_challenge(challenge, "--challenge") if challenge else None
    refs = resources.remote_challenge(challenge, spec)
    q = resources.existing_queue(queue)
    require_heldout(heldout)
    jobs = resources.jobs_backend(backend.value, namespace=namespace, image_repo=image_repo)
    queue_volume = resources.queue_volume(q)
    cfg = DispatchConfig(
        queue=q,
        backend=jobs,
        key=require_signing_key(key),
        out_dir=out,
        queue_volume=queue_volume,
        store=open_store(store) if store else None,
        heldout=resources.volume(heldout, "/heldout") if heldout else None,
        flavor=flavor,
        harness_flavor=harness_flavor,
        max_concurrent=max_concurrent,
        lease_s=lease,
        spec_for=resources.spec_source(spec),
        challenge=spec.id if spec else None,
        challenge_refs=refs,
    )
    image = resources.harness_image(backend.value, harness_image)  # rehearsals build it here
    if image:
        cfg.harness_image = image
    raise typer.Exit(_summary(Dispatcher(cfg, say=_say).run(once=once)))


def register(app: typer.Typer) -> None:
    app.command("worker", help=WORKER_HELP)(worker_cmd)
    app.command("dispatch", help=DISPATCH_HELP.format(verified=verified_paths()))(dispatch_cmd)
