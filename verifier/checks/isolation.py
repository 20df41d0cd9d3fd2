"""``integrity.isolation``: is the sandbox really closed?

For the jail runner, the jail's own probe against the verifier's plan
(``verifier.checks.isolation_jail``). For the Docker sandbox, two kinds of evidence: the
running container's configuration as the Docker engine
reports it (internal network, no published ports, read-only root, capabilities dropped,
no-new-privileges, only the weights mounted and read-only), and, where the image has a
Python, a probe executed inside the container that tries to reach outside addresses,
resolve a public name, write to the root filesystem and see the held-out files.

The runner gathers both (``Runner.isolation``, ``verifier.evidence.IsolationEvidence``);
this check judges them and sends nothing. The configuration is the Docker engine's word,
the verifier's own; the probe runs the image's own python3, so what it reports can only
add problems, never excuse one. A runner with no sandbox (a plain process, HF Jobs) says
what is left open: a ``skip``, so the result cannot be VERIFIED. A sandbox that is not
closed is the verifier's fault, not the entry's: the pipeline fails the run at
``isolation``.
"""

from __future__ import annotations

from typing import Any

from schemas.check_ids import INTEGRITY_ISOLATION
from schemas.findings import Finding
from schemas.report import CheckResult
from verifier.checks.base import CheckContext, CheckOutcome, skipped, unreliable
from verifier.checks.isolation_jail import jail_problems

#: the summary when no runner reported on a sandbox (the pipeline always asks one)
NO_EVIDENCE = "no runner reported on the engine's sandbox"


def _config_problems(desc: dict[str, Any]) -> list[str]:
    c = desc.get("container") or {}
    host = c.get("HostConfig") or {}
    net = desc.get("network") or {}
    problems = []
    if not net.get("Internal"):
        problems.append("the engine's network is not internal (it has a route out)")
    nets = (c.get("NetworkSettings") or {}).get("Networks") or {}
    if set(nets) != {net.get("Name")}:
        problems.append(f"the container is attached to other networks: {sorted(nets)}")
    if host.get("PortBindings"):
        problems.append("ports are published on the host")
    if not host.get("ReadonlyRootfs"):
        problems.append("the root filesystem is writable")
    if [x.upper() for x in host.get("CapDrop") or []] != ["ALL"]:
        problems.append(f"capabilities are not all dropped: {host.get('CapDrop')}")
    if host.get("CapAdd"):
        problems.append(f"capabilities were added: {host.get('CapAdd')}")
    if not any("no-new-privileges" in s for s in host.get("SecurityOpt") or []):
        problems.append("no-new-privileges is not set")
    if host.get("Privileged"):
        problems.append("the container is privileged")
    for m in c.get("Mounts") or []:
        # the pinned weights and the pinned drafter, read-only; nothing else from the host
        if m.get("Type") == "bind" and (
            m.get("Destination") not in ("/model", "/drafter") or m.get("RW")
        ):
            problems.append(
                f"unexpected mount {m.get('Source')} -> {m.get('Destination')} (rw={m.get('RW')})"
            )
    return problems


def _probe_problems(probe: dict[str, Any]) -> list[str]:
    problems = []
    for target, result in (probe.get("egress") or {}).items():
        if result == "connected":
            problems.append(f"the engine reached {target}")
    if probe.get("dns") == "resolved":
        problems.append("the engine resolved a public host name")
    if probe.get("root_writable"):
        problems.append("the engine wrote to its root filesystem")
    for path, seen in (probe.get("paths") or {}).items():
        if seen:
            problems.append(f"the engine can see {path}")
    return problems


def isolation(ctx: CheckContext) -> CheckOutcome:
    evidence = ctx.isolation
    if evidence is None:
        return unreliable(INTEGRITY_ISOLATION, NO_EVIDENCE)
    timing = {"probe_s": round(evidence.seconds, 3)} if evidence.seconds is not None else {}
    if evidence.no_sandbox is not None:
        facts = {k: v for k, v in evidence.facts.items() if k != "container"}
        return skipped(INTEGRITY_ISOLATION, evidence.no_sandbox, {**facts, **timing})
    probe = evidence.probe
    if "jail" in evidence.configuration:  # the jail runner's: judged on its probe and plan
        return _judged(
            jail_problems(evidence.configuration, probe),
            "the jail's own probe against the verifier's plan",
            {"configuration_checked": True, "probe": probe, **timing},
            "no route out, held-out files invisible, read-only but its scratch, limits held",
        )
    problems = _config_problems(evidence.configuration)
    observed: dict[str, Any] = {"configuration_checked": True, "probe": probe, **timing}
    if probe and "error" not in probe:
        problems += _probe_problems(probe)
        how = "configuration and an in-container probe"
    else:
        how = "configuration only (the image has no python3 for a probe)"
    return _judged(
        problems, how, observed, "no route out, held-out files invisible, root read-only"
    )


def _judged(problems: list[str], how: str, observed: dict[str, Any], holds: str) -> CheckOutcome:
    if problems:
        findings = [
            Finding(INTEGRITY_ISOLATION, "error", f"sandbox not closed: {p}") for p in problems
        ]
        result = CheckResult(
            INTEGRITY_ISOLATION,
            "fail",
            f"{len(problems)} isolation problem(s) ({how})",
            {**observed, "problems": problems},
        )
        return CheckOutcome(result, findings)
    return CheckOutcome(CheckResult(INTEGRITY_ISOLATION, "pass", f"{holds} ({how})", observed))
