"""The ``local-docker`` runner: rebuild without cache, then run in a closed sandbox.

Rebuild: the image is built from the bundle's own files with no cache, from the base
image the manifest pins (by registry digest, or by local image id for locally built
bases); an image the participant built is never used.

Sandbox: an ``internal`` network of its own (no route out; the host reaches the engine
on that network's address), read-only root, tmpfs scratch, every capability dropped,
no-new-privileges, pid/memory/CPU limits, the GPU when the spec has one, the verifier's
pinned weights mounted read-only at ``/model``; the held-out data is never mounted.
Containers and networks carry the label ``podium.sandbox`` so leftovers from an earlier
run are found and removed before a new one.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from podium import dockerx
from podium.extras import require
from schemas.challenge import ChallengeSpec
from schemas.manifest import Manifest
from verifier.evidence import IsolationEvidence
from verifier.intake import Intake
from verifier.rebuild import rebuild_image
from verifier.runners.base import EngineHandle, ImageFacts, RunnerInfo

LABEL = "podium.sandbox"
OWNER_LABEL = "podium.owner"

#: Each attempt gets 2 s, all at once (threads), so the probe takes about 2 s, not the sum
#: of its timeouts; the resolver is held to one 2 s try (RES_OPTIONS) rather than glibc's
#: two of 5 s. An answer slower than that counts as no answer.
PROBE_TIMEOUT_S = 2
_PROBE = r"""
import json, os, socket, sys, threading
T = float(os.environ.get("PODIUM_PROBE_TIMEOUT_S", "2"))
out = {"egress": {}, "dns": None, "paths": {}}
def connect(host, port):
    s = socket.socket(); s.settimeout(T)
    try:
        s.connect((host, port)); out["egress"][f"{host}:{port}"] = "connected"
    except OSError as exc:
        out["egress"][f"{host}:{port}"] = type(exc).__name__ + ": " + str(exc)[:80]
    finally:
        s.close()
def resolve():
    try:
        socket.getaddrinfo("huggingface.co", 443); out["dns"] = "resolved"
    except OSError as exc:
        out["dns"] = type(exc).__name__
jobs = [threading.Thread(target=connect, args=a, daemon=True)
        for a in (("1.1.1.1", 53), ("8.8.8.8", 443), ("93.184.216.34", 80))]
jobs.append(threading.Thread(target=resolve, daemon=True))
for j in jobs:
    j.start()
for p in sys.argv[1:]:
    out["paths"][p] = os.path.exists(p)
try:
    open("/podium-write-probe", "w").close(); out["root_writable"] = True
except OSError:
    out["root_writable"] = False
for j in jobs:
    j.join(T + 1)
for host, port in (("1.1.1.1", 53), ("8.8.8.8", 443), ("93.184.216.34", 80)):
    out["egress"].setdefault(f"{host}:{port}", "TimeoutError: no answer")
if out["dns"] is None:
    out["dns"] = "TimeoutError"
print(json.dumps(out))
"""


def owner_label() -> str:
    """Who started a sandbox: ``HOST:PID``, so leftovers are told from live neighbours."""
    return f"{socket.gethostname()}:{os.getpid()}"


def _owner_alive(owner: str | None) -> bool:
    host, _, pid = (owner or "").rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False  # another machine's or unlabelled: not ours to judge as alive
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_leftovers(client: Any) -> int:
    """Remove sandboxes whose verifier process is gone; never a live neighbour's."""
    removed = 0
    for c in client.containers.list(all=True, filters={"label": LABEL}):
        if not _owner_alive((c.labels or {}).get(OWNER_LABEL)):
            c.remove(force=True)
            removed += 1
    for n in client.networks.list(filters={"label": LABEL}):
        if not _owner_alive((n.attrs.get("Labels") or {}).get(OWNER_LABEL)):
            with contextlib.suppress(Exception):  # still in use by a live container
                n.remove()
                removed += 1
    return removed


def own_cores() -> str | None:
    """The cores this process may run on (``1,3``), when it was given fewer than the
    machine has; else None. The engine's container is held to the same cores, so a host
    that reserves cores for verifying (``taskset -c 4-15 podium verify ...``) keeps the
    timed work off the others, and two verifications pinned apart do not share a core."""
    try:
        mine = os.sched_getaffinity(0)
    except (AttributeError, OSError):  # no affinity on this platform
        return None
    if len(mine) >= (os.cpu_count() or len(mine)):
        return None
    return ",".join(str(core) for core in sorted(mine))


class LocalDockerRunner:
    info = RunnerInfo(name="local-docker", can_verify=True, sandboxed=True)

    def __init__(self, *, run_id: str | None = None, gpu: bool | None = None):
        """``gpu`` forces the GPU on or off; None leaves it to the pipeline's decision."""
        self.run_id = run_id or secrets.token_hex(6)
        self.gpu = gpu
        self.client: Any = None
        self.image_id: str | None = None
        self.manifest: Manifest | None = None
        self._containers: list[Any] = []
        self._networks: list[Any] = []

    def _client(self) -> Any:
        if self.client is None:
            self.client = dockerx.connect()
        return self.client

    def environment(self) -> dict[str, Any]:
        return {"docker": dockerx.docker_version(self._client())}

    def prepare(
        self, intake: Intake, spec: ChallengeSpec, *, on_log: Callable[[str], None]
    ) -> ImageFacts:
        assert intake.root is not None and intake.manifest is not None, "intake failed"
        client = self._client()
        left = remove_leftovers(client)
        if left:
            on_log(f"removed {left} container(s)/network(s) left from an earlier run")
        self.manifest = intake.manifest
        image = rebuild_image(
            client,
            intake.root,
            intake.manifest,
            spec,
            tag=f"podium-verify/{self.run_id}",
            on_log=on_log,
        )
        self.image_id = image["id"]
        return ImageFacts.of(image)

    def _sandbox(
        self, spec: ChallengeSpec, model_dir: Path, gpu: bool, drafter_dir: Path | None
    ) -> dict[str, Any]:
        """The container's settings: the engine's environment, the pinned model read-only,
        and the sandbox (read-only root, tmpfs scratch, no capabilities, limits)."""
        assert self.manifest is not None
        docker = require("docker", extra="docker")
        env = {
            **(self.manifest.engine.env or {}),
            "MODEL_PATH": "/model",
            "PORT": str(self.manifest.engine.port),
            "SERVED_MODEL_NAME": self.manifest.engine.served_model_name or "model",
            "HF_HUB_OFFLINE": "1",
        }
        volumes = {str(model_dir): {"bind": "/model", "mode": "ro"}}
        if drafter_dir is not None:
            env["DRAFTER_PATH"] = "/drafter"
            volumes[str(drafter_dir)] = {"bind": "/drafter", "mode": "ro"}
        limits = spec.limits
        want_gpu = gpu if self.gpu is None else self.gpu
        kwargs: dict[str, Any] = {
            "environment": env,
            "read_only": True,
            # exec: Docker mounts a tmpfs noexec by default, and vLLM loads the kernels
            # torch and triton compile into its cache there
            "tmpfs": {"/tmp": "rw,nosuid,nodev,exec,size=1g"},
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges"],
            "pids_limit": limits.pids or 1024,
            "volumes": volumes,
            "shm_size": "8g" if want_gpu else "256m",
            "detach": True,
        }
        if limits.memory_bytes:
            kwargs["mem_limit"] = limits.memory_bytes
            kwargs["memswap_limit"] = limits.memory_bytes
        if limits.cpus:
            kwargs["nano_cpus"] = int(limits.cpus * 1e9)
        if (cores := own_cores()) is not None:
            kwargs["cpuset_cpus"] = cores
        if want_gpu:
            kwargs["device_requests"] = [
                docker.types.DeviceRequest(count=1, capabilities=[["gpu"]])
            ]
        return kwargs

    def start(
        self, spec: ChallengeSpec, *, model_dir: Path, gpu: bool, drafter_dir: Path | None = None
    ) -> EngineHandle:
        assert self.image_id is not None and self.manifest is not None, "prepare() first"
        client = self._client()
        labels = {LABEL: "1", "podium.run": self.run_id, OWNER_LABEL: owner_label()}
        port = self.manifest.engine.port
        try:
            net = client.networks.create(
                f"podium-sbx-{self.run_id}", driver="bridge", internal=True, labels=labels
            )
            self._networks.append(net)
            kwargs = self._sandbox(spec, model_dir, gpu, drafter_dir)
            container = client.containers.create(
                self.image_id,
                name=f"podium-engine-{self.run_id}",
                labels=labels,
                network=net.name,
                **kwargs,
            )
            self._containers.append(container)
            container.start()
            container.reload()
            ip = container.attrs["NetworkSettings"]["Networks"][net.name]["IPAddress"]
        except Exception as exc:  # docker-py errors: translated in one place
            raise dockerx.translate(exc) from exc
        return _handle(client, container, net, f"http://{ip}:{port}")

    def isolation(self, handle: EngineHandle, *, forbidden_paths: list[Path]) -> IsolationEvidence:
        container = self._containers[-1] if self._containers else None
        probe: dict[str, Any] | None = None
        if container is not None:
            probe = self._probe(container, [str(p) for p in forbidden_paths])
        return IsolationEvidence(configuration=handle.describe(), probe=probe)

    def _probe(self, container: Any, paths: list[str]) -> dict[str, Any] | None:
        import json

        try:
            code, out = container.exec_run(
                ["python3", "-c", _PROBE, *paths],
                demux=False,
                environment={
                    "PODIUM_PROBE_TIMEOUT_S": str(PROBE_TIMEOUT_S),
                    "RES_OPTIONS": f"timeout:{PROBE_TIMEOUT_S} attempts:1",
                },
            )
        except Exception:
            return None  # the image has no python3: configuration evidence only
        if code != 0:
            return {"error": (out or b"").decode("utf-8", "replace")[-300:]}
        try:
            result: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
            return result
        except (ValueError, IndexError):
            return None

    def cleanup(self) -> None:
        for c in self._containers:
            with contextlib.suppress(Exception):
                c.remove(force=True)
        for n in self._networks:
            with contextlib.suppress(Exception):
                n.remove()
        self._containers.clear()
        self._networks.clear()
        if self.image_id and self.client is not None:
            with contextlib.suppress(Exception):
                self.client.images.remove(self.image_id, force=True)
            self.image_id = None


def _handle(client: Any, container: Any, net: Any, base_url: str) -> EngineHandle:
    """The running container, as the pipeline holds it."""

    def is_alive() -> bool:
        try:
            container.reload()
        except Exception:
            return False
        return bool(container.status == "running")

    def logs(n: int) -> str:
        try:
            data: bytes = container.logs()
        except Exception:
            return ""
        return data.decode("utf-8", "replace")[-n:]

    def stop() -> None:
        # SIGKILL at once: what the verifier needs of the engine (its answers, its log)
        # is recorded; a graceful stop would only wait, up to docker's grace period
        with contextlib.suppress(Exception):
            container.kill()

    def describe() -> dict[str, Any]:
        container.reload()
        return {"container": container.attrs, "network": client.networks.get(net.id).attrs}

    return EngineHandle(
        base_url=base_url, is_alive=is_alive, logs=logs, stop=stop, describe=describe
    )
