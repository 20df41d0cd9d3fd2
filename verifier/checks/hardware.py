"""The machine a run had: the spec's hardware (``env.hardware``) and a clean GPU
(``env.gpu-busy``), judged on the fingerprint (``verifier.fingerprint``).

Off-spec hardware is a warning whose effect is UNOFFICIAL: the run goes on, its numbers
are kept, and it is never VERIFIED. Another process on the GPU makes the machine unclean.
"""

from __future__ import annotations

from schemas.challenge import Hardware
from schemas.check_ids import ENV_GPU_BUSY, ENV_HARDWARE
from schemas.findings import Finding
from verifier.fingerprint import Fingerprint


def hardware_findings(hardware: Hardware, fp: Fingerprint) -> tuple[bool, list[Finding]]:
    """Is this the spec's hardware? Off-spec is an ``env.*`` warning: the run is UNOFFICIAL."""
    if hardware.accelerator == "cpu":
        return True, []
    names = [g["name"] for g in fp.gpus]
    if not names:
        return False, [
            Finding(
                ENV_HARDWARE,
                "warning",
                f"no GPU found; the spec requires {hardware.describe()}: the result is UNOFFICIAL",
                hint="run on the challenge's hardware for a VERIFIED result",
            )
        ]
    wanted, count = hardware.gpu_name, hardware.gpu_count or 1
    matching = [n for n in names if n == wanted]
    if len(matching) < count:
        return False, [
            Finding(
                ENV_HARDWARE,
                "warning",
                f"GPU is {names[0]!r}, not exactly {wanted!r}: the result is UNOFFICIAL",
            )
        ]
    return True, []


def clean_gpu_findings(fp: Fingerprint, *, own_pids: set[int] | None = None) -> list[Finding]:
    """Another process holding the GPU makes the run unclean (and the numbers untrustworthy)."""
    others = sorted(set(fp.gpu_pids) - (own_pids or set()))
    if not others:
        return []
    return [
        Finding(
            ENV_GPU_BUSY,
            "warning",
            f"other processes hold the GPU (pids {others[:5]}): the machine is not clean",
            hint="stop every GPU process before verifying",
        )
    ]
