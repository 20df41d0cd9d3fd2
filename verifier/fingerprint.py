"""The environment fingerprint: what the result was measured on.

GPUs are read through NVML (``nvidia-ml-py``, module ``pynvml``) when it is installed
and a driver answers; the GPU name is compared to the spec's by exact equality ("NVIDIA
A10" and "NVIDIA A100" are other cards) in ``verifier.checks.hardware``: off-spec
hardware may run, but its result is UNOFFICIAL. "Clean" is judged there too, from the
processes NVML lists: no other process may hold the GPU.
"""

from __future__ import annotations

import contextlib
import os
import platform
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from podium import __version__
from podium.canonical import canonical_json, sha256_bytes
from podium.version import toolkit_git_sha


def _optional_fields(pynvml: Any, h: Any) -> dict[str, Any]:
    """Fields not every board reports; a missing one is None."""
    getters = {
        "sm_clock_max_mhz": lambda: pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM),
        "mem_clock_max_mhz": lambda: pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_MEM),
        "power_limit_w": lambda: pynvml.nvmlDeviceGetPowerManagementLimit(h) / 1000.0,
        "compute_capability": lambda: ".".join(
            map(str, pynvml.nvmlDeviceGetCudaComputeCapability(h))
        ),
    }
    out: dict[str, Any] = {}
    for key, fn in getters.items():
        try:
            out[key] = fn()
        except Exception:  # NVMLError_NotSupported and friends
            out[key] = None
    return out


def _nvml_gpus() -> tuple[list[dict[str, Any]], str | None, str | None, list[int]]:
    """(gpus, driver, cuda, pids of compute processes), or empty when NVML is absent."""
    try:
        import pynvml
    except ImportError:
        return [], None, None, []
    try:
        pynvml.nvmlInit()
    except Exception:  # NVMLError: no driver, no device
        return [], None, None, []
    try:

        def text(v: Any) -> str:
            return v.decode() if isinstance(v, bytes) else str(v)

        driver = text(pynvml.nvmlSystemGetDriverVersion())
        cuda_v = pynvml.nvmlSystemGetCudaDriverVersion()
        cuda = f"{cuda_v // 1000}.{(cuda_v % 1000) // 10}"
        gpus, pids = [], []
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            mem = pynvml.nvmlDeviceGetMemoryInfo(h)
            info: dict[str, Any] = {
                "index": i,
                "name": text(pynvml.nvmlDeviceGetName(h)),
                "uuid": text(pynvml.nvmlDeviceGetUUID(h)),
                "memory_total_bytes": int(mem.total),
            }
            info.update(_optional_fields(pynvml, h))
            try:
                procs = pynvml.nvmlDeviceGetComputeRunningProcesses(h)
                pids += [int(p.pid) for p in procs]
            except Exception:
                pass
            gpus.append(info)
        return gpus, driver, cuda, pids
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


@dataclass(frozen=True)
class Fingerprint:
    data: dict[str, Any]
    gpu_pids: list[int] = field(default_factory=list)

    @property
    def sha256(self) -> str:
        return sha256_bytes(canonical_json(self.data))

    @property
    def gpus(self) -> list[dict[str, Any]]:
        return list(self.data.get("gpus", []))

    def summary(self) -> str:
        if self.gpus:
            return f"{len(self.gpus)} x {self.gpus[0]['name']}"
        return f"CPU ({self.data.get('cpu', {}).get('model') or 'unknown'})"


def take_fingerprint(docker_version: dict[str, Any] | None = None) -> Fingerprint:
    gpus, driver, cuda, pids = _nvml_gpus()
    data: dict[str, Any] = {
        "gpus": gpus,
        "driver_version": driver,
        "cuda_driver_version": cuda,
        "cpu": {"model": _cpu_model(), "count": os.cpu_count()},
        "kernel": platform.release(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "docker": docker_version,
        "toolkit": {"name": "podium", "version": __version__, "git_sha": toolkit_git_sha()},
    }
    return Fingerprint(data=data, gpu_pids=pids)
