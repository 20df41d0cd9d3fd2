"""Hugging Face Jobs as the dispatcher's executor, through ``huggingface_hub``'s Jobs API.

Uses what the installed client exposes (``run_job`` with ``labels``, ``secrets``,
``volumes``, ``network_group`` and ``network_aliases``; ``inspect_job``, ``list_jobs``
filtered by labels, ``cancel_job``, ``fetch_job_logs``). Images are pushed with the
Docker engine to ``image_repo`` (a registry the Jobs service can pull from) before
they run. A ``local`` volume cannot exist on Jobs: asking for one is a usage error.
"""

from __future__ import annotations

from typing import Any

from huggingface_hub import HfApi, Volume

from podium.errors import DockerError, UsageError
from podium.hub import HUB_ERRORS, resolve_endpoint, translate_hub_error
from verifier.scale.dispatch.jobs import JobSpec, JobState


class HfJobs:
    name = "hf"
    local_volumes = False

    def __init__(
        self,
        *,
        namespace: str,
        endpoint: str | None = None,
        token: str | None = None,
        image_repo: str | None = None,
    ):
        self.namespace = namespace
        self.api = HfApi(endpoint=resolve_endpoint(endpoint), token=token)
        self.image_repo = image_repo

    def _call(self, action: str, fn: Any) -> Any:
        try:
            return fn()
        except HUB_ERRORS as exc:
            raise translate_hub_error(exc, action=action, target=f"jobs/{self.namespace}") from exc

    def publish_image(self, image_id: str, name: str) -> str:
        if not self.image_repo:
            raise UsageError(
                "HF Jobs needs the participant's image in a registry it can pull from",
                hint="pass --image-repo REGISTRY/REPO (the dispatcher pushes each rebuilt image)",
            )
        from podium import dockerx

        client = dockerx.connect()
        try:
            image = client.images.get(image_id)
            image.tag(self.image_repo, tag=name)
            client.images.push(self.image_repo, tag=name)
            image.reload()
        except Exception as exc:  # docker-py errors: translated in one place
            raise dockerx.translate(exc) from exc
        digests = [d for d in image.attrs.get("RepoDigests", []) if d.startswith(self.image_repo)]
        if not digests:
            raise DockerError(f"pushed {self.image_repo}:{name} but got no digest back")
        return str(digests[0])  # run by digest: what was verified is what runs

    def run(self, spec: JobSpec) -> str:
        volumes = []
        for v in spec.volumes:
            if v.kind == "local":
                raise UsageError(f"a host folder ({v.source}) cannot be mounted into HF Jobs")
            volumes.append(
                Volume(
                    type=v.kind,
                    source=v.source,
                    mount_path=v.mount_path,
                    revision=v.revision,
                    read_only=v.read_only,
                )
            )
        info = self._call(
            "start a job",
            lambda: self.api.run_job(
                image=spec.image,
                command=spec.command,
                env=spec.env or None,
                secrets=spec.secrets or None,
                flavor=spec.flavor,
                timeout=spec.timeout_s,
                labels=spec.labels or None,
                volumes=volumes or None,
                network_group=spec.network_group,
                network_aliases=spec.network_aliases or None,
                namespace=self.namespace,
            ),
        )
        return str(info.id)

    @staticmethod
    def _state(info: Any) -> JobState:
        stage = info.status.stage
        return JobState(
            id=info.id,
            stage=str(getattr(stage, "value", stage)),
            labels=dict(info.labels or {}),
            message=info.status.message,
        )

    def inspect(self, job_id: str) -> JobState:
        return self._state(
            self._call(
                "inspect a job",
                lambda: self.api.inspect_job(job_id=job_id, namespace=self.namespace),
            )
        )

    def find(self, labels: dict[str, str]) -> list[JobState]:
        infos = self._call(
            "list jobs", lambda: list(self.api.list_jobs(labels=labels, namespace=self.namespace))
        )
        return [self._state(i) for i in infos]

    def cancel(self, job_id: str) -> None:
        self._call(
            "cancel a job", lambda: self.api.cancel_job(job_id=job_id, namespace=self.namespace)
        )

    def logs(self, job_id: str) -> list[str]:
        return list(
            self._call(
                "fetch job logs",
                lambda: list(self.api.fetch_job_logs(job_id=job_id, namespace=self.namespace)),
            )
        )

    def cleanup(self, network_group: str) -> None:
        """Nothing to remove: Jobs keeps finished jobs (and their logs) itself."""
