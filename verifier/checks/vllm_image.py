"""``engine.not-vllm``, and which levers podium itself made true on a vLLM entry.

The evidence is ``verifier.evidence.VllmImage`` (``verifier.vllm_image``): the bundle's
Dockerfile and files (the participant's, hashed by intake), the spec's pinned vLLM images
(the organizer's), the verifier's own copy of podium's launcher and the base its own
rebuild started FROM. Nothing the engine says or logs is read.

- ``not_vllm``: a ``kind = "vllm"`` entry whose image cannot be the pinned vLLM is an
  ``engine.not-vllm`` error at intake (REJECTED before anything runs): its base is not
  one of the spec's pinned vLLM images, or its command starts neither podium's launcher
  nor vLLM's server. A board row would otherwise advertise a vLLM server that never ran.
- ``confirmed_levers``: a KV-cache lever (``verifier.declared.KV_CACHE``) widens
  ``integrity.same-path`` only where podium made it true: the base is the pinned vLLM,
  the verifier rebuilt the image from it, the image adds nothing but podium's launcher
  (byte for byte) and the frozen config, the launcher runs on the config alone, and the
  verifier's own copy of the launcher turns the knob into vLLM's own argument. Anything
  short of that confirms nothing, and the entry is judged against the plain budget; the
  reason is recorded (``DeclaredModel.unconfirmed``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from schemas.check_ids import ENGINE_NOT_VLLM
from schemas.findings import Finding
from verifier.declared import KV_CACHE
from verifier.evidence import VllmImage

CHECK_ID = ENGINE_NOT_VLLM
#: the vLLM argument podium's launcher makes of each KV-cache knob
LEVER_ARGS = {"KV_CACHE_DTYPE": "--kv-cache-dtype", "CALCULATE_KV_SCALES": "--calculate-kv-scales"}
_HINT = (
    "build FROM the challenge's pinned vLLM image and start podium's launcher, "
    'or declare kind = "custom"'
)


def not_vllm(ev: VllmImage) -> list[Finding]:
    """The ``engine.not-vllm`` findings of one vLLM entry's image."""
    out: list[Finding] = []
    if ev.pinned and not ev.base_is_pinned:
        out.append(
            Finding(
                CHECK_ID,
                "error",
                f'a kind = "vllm" entry built FROM {ev.base_ref}, which is none of the '
                f"challenge's pinned vLLM images ({', '.join(ev.pinned)})",
                hint=_HINT,
                where="manifest.json:engine.base_image",
            )
        )
    if ev.command is not None and not ev.starts_vllm:
        out.append(
            Finding(
                CHECK_ID,
                "error",
                f'a kind = "vllm" entry whose image runs {" ".join(ev.command)[:120]!r}: '
                "neither podium's launcher (python3 -m engines.vllm_launcher) nor vLLM's server",
                hint=_HINT,
                where="Dockerfile",
            )
        )
    return out


def _declared(config: Mapping[str, Any]) -> dict[str, Any]:
    return {k: config[k] for k in KV_CACHE if config.get(k) not in (None, "", "auto", False, 0)}


def unconfirmed_because(ev: VllmImage | None) -> str | None:
    """Why podium did not make a vLLM lever true here; None where it did."""
    if ev is None:
        return 'not a kind = "vllm" entry: only the pinned vLLM run by podium\'s launcher counts'
    if not ev.pinned:
        return "the challenge pins no vLLM image"
    if not ev.base_is_pinned:
        return f"the base {ev.base_ref} is not the pinned vLLM"
    if ev.foreign:
        return "the image is not podium's launcher alone on the pinned vLLM: " + "; ".join(
            ev.foreign[:4]
        )
    if not ev.rebuilt_from_pin:
        return "the verifier did not rebuild the image from the pinned vLLM here"
    if ev.serve_args is None:
        return "podium's launcher refuses the frozen config"
    return None


def confirmed_levers(
    ev: VllmImage | None, config: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, str]]:
    """The declared KV-cache levers podium made true (knob -> value), and each other
    declared one with why it was not."""
    declared = _declared(config)
    if not declared:
        return {}, {}
    why = unconfirmed_because(ev)
    if why is not None or ev is None or ev.serve_args is None:
        return {}, {k: why or "" for k in declared}
    args = list(ev.serve_args)
    confirmed: dict[str, Any] = {}
    unconfirmed: dict[str, str] = {}
    for knob, value in declared.items():
        flag = LEVER_ARGS[knob]
        given = args[args.index(flag) + 1] if flag in args[:-1] else None
        if flag in args and (isinstance(value, bool) or given == str(value)):
            confirmed[knob] = value
        else:
            unconfirmed[knob] = f"podium's launcher does not pass it to vLLM as {flag}"
    return confirmed, unconfirmed
