"""``podium worker``, ``podium dispatch`` and ``podium harness``: verification at scale."""

from __future__ import annotations

import enum
import json
import os
from pathlib import Path
from typing import Annotated, Any

import typer

from podium.cli.options import (
    ChallengeOpt,
    JsonOpt,
    KeyOpt,
    LocalRunner,
    LocalRunnerOpt,
    QueueOpt,
    out_option,
    require_heldout,
    require_signing_key,
)
from podium.cli.output import console, emit, json_mode, set_json
from podium.errors import EXIT_CANNOT_EVALUATE, EXIT_OK, UsageError

WORKER_HELP = """\
Claim a request from the queue, verify it, publish the record, mark the request, repeat.
A lease (renewed in the background) makes a crashed worker's request come back; the
first SIGINT/SIGTERM finishes the current request then stops, a second releases it.

Examples:

  podium worker --queue hf://datasets/org/podium-queue --store hf://datasets/org/board
  --key keys/organizer.pem --heldout /secure/heldout

  podium worker --queue ./queue --store ./leaderboard-data --key k.pem --once
"""

DISPATCH_HELP = """\
Claim requests and verify each on a jobs service: a server job (the participant's
rebuilt image on --flavor, no secrets) and a harness job (podium's image on a CPU
flavour with the held-out set and the signing key) in one private network group.

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
"""

HARNESS_HELP = """\
Run the harness against an engine at --server (what the harness job runs, so it is not
listed in `podium --help`): PPL, TPS, checks, verdict, a report signed with --key or
$PODIUM_SIGNING_KEY, printed as PODIUM-REPORT lines for the dispatcher.

Example:

  podium harness --server 'http://${HF_NETWORK_GROUP_PREFIX}engine:8000'
  --bundle /queue/bundles/SHA.tar.gz --challenge fast-gemma --heldout /heldout
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


def _volume(uri: str, mount: str) -> Any:
    from verifier.scale.dispatch.jobs import VolumeSpec

    if uri.startswith("hf://"):
        from verifier.scale.queue.stores import hub_repo_of

        repo, _ = hub_repo_of(uri.split("@")[0])
        rev = uri.split("@", 1)[1] if "@" in uri else None
        return VolumeSpec("dataset", repo, mount, revision=rev)
    return VolumeSpec("local", str(Path(uri).resolve()), mount)


def register(app: typer.Typer) -> None:
    @app.command("worker", help=WORKER_HELP)
    def worker_cmd(
        queue: QueueOpt = None,
        store: PublishOpt = None,
        key: KeyOpt = None,
        runner: LocalRunnerOpt = LocalRunner.local_docker,
        heldout: Annotated[str | None, typer.Option(help="Held-out set (dir or hf://).")] = None,
        out: Annotated[Path, out_option("Reports and logs")] = Path("out/worker"),
        lease: LeaseOpt = 900.0,
        poll: Annotated[
            float, typer.Option(help="Seconds between looks at an empty queue.")
        ] = 30.0,
        once: Annotated[bool, typer.Option("--once", help="At most one request.")] = False,
        json_out: JsonOpt = False,
    ) -> None:
        from functools import partial

        from leaderboard.stores import open_store
        from podium.cli.queue_cmd import existing_queue
        from verifier.runners.factory import make_runner, reference_runner
        from verifier.scale.worker import Worker, WorkerConfig

        set_json(json_out)
        from verifier.runners.factory import runner_info

        denied = runner_info(runner.value).unsandboxed()
        if denied:
            raise UsageError(
                f"{denied}: a worker signs and publishes what it verifies, so it needs a sandbox",
                hint="run the worker with --runner local-docker",
            )
        cfg = WorkerConfig(
            queue=existing_queue(queue),
            store=open_store(store) if store else None,
            key=require_signing_key(key),
            runner=partial(make_runner, runner.value),
            out_dir=out,
            heldout=require_heldout(heldout),
            reference=reference_runner,
            lease_s=lease,
            poll_s=poll,
        )
        handled = Worker(cfg, say=_say).run(once=once, install_signals=True)
        raise typer.Exit(_summary(handled))

    @app.command("dispatch", help=DISPATCH_HELP.format(verified=verified_paths()))
    def dispatch_cmd(
        queue: QueueOpt = None,
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
        from podium.cli.queue_cmd import existing_queue
        from verifier.scale.dispatch.dispatcher import DispatchConfig, Dispatcher
        from verifier.scale.queue.stores import LocalQueue

        set_json(json_out)
        q = existing_queue(queue)
        require_heldout(heldout)
        jobs: Any
        if backend is Backend.local:
            from verifier.scale.dispatch.local import LocalJobs

            jobs = LocalJobs()
        else:
            from verifier.scale.dispatch.hf import HfJobs

            if not namespace:
                raise UsageError("--namespace is needed for HF Jobs", hint="your user or org name")
            jobs = HfJobs(
                namespace=namespace,
                endpoint=os.environ.get("HF_ENDPOINT"),
                token=os.environ.get("HF_TOKEN"),
                image_repo=image_repo,
            )
        queue_volume = (
            _volume(str(q.root), "/queue")
            if isinstance(q, LocalQueue)
            else _volume(q.url, "/queue")
        )
        cfg = DispatchConfig(
            queue=q,
            backend=jobs,
            key=require_signing_key(key),
            out_dir=out,
            queue_volume=queue_volume,
            store=open_store(store) if store else None,
            heldout=_volume(heldout, "/heldout") if heldout else None,
            flavor=flavor,
            harness_flavor=harness_flavor,
            max_concurrent=max_concurrent,
            lease_s=lease,
        )
        if harness_image:
            cfg.harness_image = harness_image
        elif backend is Backend.local:  # rehearsals build podium's image here
            from verifier.scale.dispatch.harness_image import build_harness_image

            cfg.harness_image = build_harness_image()
        raise typer.Exit(_summary(Dispatcher(cfg, say=_say).run(once=once)))

    @app.command("harness", help=HARNESS_HELP, hidden=True)
    def harness_cmd(
        server: Annotated[str, typer.Option(help="The engine's base URL ($VARS expanded).")],
        bundle: Annotated[Path, typer.Option(help="The submission bundle.")],
        challenge: ChallengeOpt = None,
        key: KeyOpt = None,
        heldout: Annotated[str | None, typer.Option(help="Held-out set (dir or hf://).")] = None,
        reported_tps: Annotated[float | None, typer.Option(help="The participant's TPS.")] = None,
        out: Annotated[Path, out_option("Where the report goes")] = Path("out/harness"),
        image_id: Annotated[str | None, typer.Option(help="The server image's id.")] = None,
        server_job: Annotated[str | None, typer.Option(help="The server job's id.")] = None,
        flavor: Annotated[str | None, typer.Option(help="The server job's flavour.")] = None,
        network_group: Annotated[str | None, typer.Option(help="The network group.")] = None,
        json_out: JsonOpt = False,
    ) -> None:
        from podium.cli.options import bundle_challenge, challenge_name
        from podium.cli.verification import exit_code
        from verifier.scale.dispatch.harness_job import run_harness_job

        set_json(json_out)
        facts = {
            "server_job": server_job,
            "flavor": flavor,
            "network_group": network_group,
            "image": {"id": image_id} if image_id else {},
        }
        outcome = run_harness_job(
            server_url=server,
            bundle=bundle,
            challenge=challenge_name(challenge, bundle_challenge(bundle)),
            out=out,
            key=require_signing_key(key),
            heldout=require_heldout(heldout),
            reported_tps=reported_tps,
            facts=facts,
            print_line=lambda line: print(line, flush=True),
        )
        if json_mode():
            print(json.dumps({"verdict": outcome.verdict, "report": str(outcome.report_path)}))
        raise typer.Exit(exit_code(outcome.verdict))
