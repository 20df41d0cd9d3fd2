"""One source of truth for a config: the image may not set an engine knob of its own.

The frozen engine config (``[engine.config]`` of ``podium.toml``, ``engine.config`` of
the manifest) is what the verifier reads, judges and reproduces (the declared window, the
dtype, the rules). A knob the Dockerfile sets too, as an ``ENV`` or as an argument of the
engine's ``CMD``/``ENTRYPOINT`` (``--sliding-window 100``), is a second source, and the
container runs it: so it must agree with the frozen config, and it is judged by the
challenge's rules as the config is. ``podium submission validate`` and intake run the
same function (``image_knob_findings``); each finding names both places.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from schemas.challenge import ChallengeSpec
from schemas.check_ids import ENGINE_IMAGE_KNOB
from schemas.engine_config import check_engine_config, known_knobs
from schemas.findings import Finding
from submission.dockerfile import DockerfileError, Setting, image_settings


def _as_text(value: Any) -> str:
    """A config value as an environment variable carries it (the engines' own rule)."""
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return str(value)


def _same(text: str, value: Any) -> bool:
    if _as_text(value) == text:
        return True
    try:  # numbers and JSON written another way: 188 and "188", {"a": 1} spaced
        return bool(json.loads(text) == value)
    except ValueError:
        return False


def _typed(text: str) -> Any:
    """The value an engine would read from ``text``, for the challenge's rules."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def image_knob_findings(
    dockerfile: str,
    config: Mapping[str, Any],
    spec: ChallengeSpec | None,
    *,
    file: str,
    config_where: Callable[[str], str],
) -> list[Finding]:
    """Every engine knob the Dockerfile text sets that disagrees with ``config``, that
    ``config`` does not hold, or that the challenge forbids; ``config_where(key)`` names
    the key in the frozen config (``podium.toml:22 engine.config.SLIDING_WINDOW``)."""
    try:
        settings, _ = image_settings(dockerfile, file=file)
    except DockerfileError as exc:
        return [
            Finding(
                ENGINE_IMAGE_KNOB,
                "error",
                f"{file} cannot be read for the knobs it sets: {exc.message}",
                hint="write ENV KEY=value and CMD as a JSON array",
                where=file,
            )
        ]
    knobs = set(known_knobs())
    ours: list[Setting] = [s for s in settings if s.name in knobs]
    out: list[Finding] = []
    for setting in ours:
        here = f"{setting.where} {setting.name}={setting.value}"
        if setting.name not in config:
            out.append(
                Finding(
                    ENGINE_IMAGE_KNOB,
                    "error",
                    f"{here} sets an engine knob that the frozen config does not "
                    f"({config_where(setting.name)}): the image would run a setting the "
                    "verifier neither reads nor judges.",
                    hint=f"move {setting.name} into [engine.config] and remove it from {file}",
                    where=setting.where,
                )
            )
        elif not _same(setting.value, config[setting.name]):
            out.append(
                Finding(
                    ENGINE_IMAGE_KNOB,
                    "error",
                    f"{here} disagrees with {config_where(setting.name)} = "
                    f"{_as_text(config[setting.name])}: the image would run "
                    f"{setting.value}, the verifier would judge the config's value.",
                    hint=f"set {setting.name} in [engine.config] only, and remove it from {file}",
                    where=setting.where,
                )
            )
    # the challenge's rules, on what the image would run where it is not the config's (a
    # value both hold is judged once, as the config's)
    own = [s for s in ours if s.name not in config or not _same(s.value, config[s.name])]
    if spec is not None and own:
        typed = {s.name: _typed(s.value) for s in own}
        lines = {s.name: int(s.where.split(":", 1)[1].split()[0]) for s in own}
        for finding in check_engine_config(typed, spec, file=file, lines=lines):
            if finding.is_error:
                out.append(finding)
    return out
