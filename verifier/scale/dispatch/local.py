"""The ``local`` jobs backend: the dispatcher's job specs as Docker containers, on one machine.

So an organizer can rehearse a whole dispatch without Jobs: each network group is an
``internal`` Docker network of its own (no route out, not even to the host's published
ports), each job a container on it, reachable by its aliases; labels, environment,
secrets (as environment, like Jobs) and read-only volumes follow the spec. ``local``
volumes are host folders; ``model``/``dataset`` volumes resolve through ``mounts``
(``"dataset:ORG/NAME" -> folder``). Flavours are recorded, not enforced: the machine
has what it has. A rehearsal is stricter than Jobs on one point, egress (docs/scale.md).
"""

from __future__ import annotations

import contextlib
import secrets
from pathlib import Path
from typing import Any

from podium import dockerx
from podium.errors import DockerError, UsageError
from verifier.scale.dispatch.jobs import JobSpec, JobState

LABEL = "podium.job"
CANCELED_LABEL = "podium.job.canceled"


class LocalJobs:
    name = "local"
    local_volumes = True

    def __init__(self, *, mounts: dict[str, Path] | None = None, client: Any = None):
        self.mounts = {k: Path(v) for k, v in (mounts or {}).items()}
        self._client = client
        self._canceled: set[str] = set()

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = dockerx.connect()
        return self._client

    def publish_image(self, image_id: str, name: str) -> str:
        return image_id  # already where the containers run

    def _network(self, group: str) -> Any:
        found = self.client.networks.list(names=[f"podium-job-{group}"])
        if found:
            return found[0]
        return self.client.networks.create(
            f"podium-job-{group}",
            driver="bridge",
            internal=True,
            labels={LABEL: "1", "podium.group": group},
        )

    def _binds(self, spec: JobSpec) -> dict[str, dict[str, str]]:
        binds: dict[str, dict[str, str]] = {}
        for v in spec.volumes:
            host = Path(v.source) if v.kind == "local" else self.mounts.get(f"{v.kind}:{v.source}")
            if host is None or not host.exists():
                raise UsageError(
                    f"no local folder for the {v.kind} volume {v.source}",
                    hint=f"map it with mounts={{'{v.kind}:{v.source}': FOLDER}}",
                )
            binds[str(host.resolve())] = {
                "bind": v.mount_path,
                "mode": "ro" if v.read_only else "rw",
            }
        return binds

    def run(self, spec: JobSpec) -> str:
        labels = {**spec.labels, LABEL: "1", "podium.flavor": spec.flavor}
        kwargs: dict[str, Any] = {
            # Jobs tells group members how to name each other; here aliases are bare names
            "environment": {"HF_NETWORK_GROUP_PREFIX": "", **spec.env, **spec.secrets},
            "labels": labels,
            "volumes": self._binds(spec),
            "detach": True,
            "name": f"podium-job-{secrets.token_hex(6)}",
        }
        if spec.command:
            kwargs["command"] = spec.command
        try:
            network = None
            if spec.network_group:
                network = self._network(spec.network_group)
                labels["podium.group"] = spec.network_group
                kwargs["network"] = network.name
            container = self.client.containers.create(spec.image, **kwargs)
            if network is not None and spec.network_aliases:
                network.disconnect(container)
                network.connect(container, aliases=list(spec.network_aliases))
            container.start()
        except Exception as exc:  # docker-py errors: translated in one place
            raise dockerx.translate(exc, image=spec.image) from exc
        return str(container.id[:12])

    def _container(self, job_id: str) -> Any:
        try:
            return self.client.containers.get(job_id)
        except Exception as exc:
            raise dockerx.translate(exc, container=job_id) from exc

    def _state(self, c: Any) -> JobState:
        status = c.status
        code = (c.attrs.get("State") or {}).get("ExitCode", 0)
        if c.id[:12] in self._canceled:
            stage = "CANCELED"
        elif status in ("created", "restarting"):
            stage = "SCHEDULING"
        elif status in ("running", "paused"):
            stage = "RUNNING"
        else:
            stage = "COMPLETED" if code == 0 else "ERROR"
        msg = None if stage != "ERROR" else f"exit code {code}"
        return JobState(c.id[:12], stage, dict(c.labels or {}), msg)

    def inspect(self, job_id: str) -> JobState:
        return self._state(self._container(job_id))

    def find(self, labels: dict[str, str]) -> list[JobState]:
        filters = {"label": [LABEL] + [f"{k}={v}" for k, v in labels.items()]}
        return [self._state(c) for c in self.client.containers.list(all=True, filters=filters)]

    def cancel(self, job_id: str) -> None:
        c = self._container(job_id)
        self._canceled.add(c.id[:12])
        with contextlib.suppress(Exception):
            c.stop(timeout=5)

    def logs(self, job_id: str) -> list[str]:
        try:
            data: bytes = self._container(job_id).logs()
        except DockerError:
            return []
        return data.decode("utf-8", "replace").splitlines()

    def cleanup(self, network_group: str) -> None:
        for c in self.client.containers.list(
            all=True, filters={"label": [LABEL, f"podium.group={network_group}"]}
        ):
            with contextlib.suppress(Exception):
                c.remove(force=True)
        for n in self.client.networks.list(names=[f"podium-job-{network_group}"]):
            with contextlib.suppress(Exception):
                n.remove()
