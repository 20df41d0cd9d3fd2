"""What a ``kind = "vllm"`` entry's image is, as far as the verifier can tell from what it
holds itself: the evidence ``verifier.checks.vllm_image`` judges.

A lever the reference cannot reproduce (a KV-cache dtype) may widen a bound only where
podium made it true. For vLLM that means: the image the verifier rebuilt is the spec's
pinned vLLM image with nothing added but podium's own launcher and the frozen config, the
launcher starts with the frozen config as its only argument, and podium's launcher turns
the knob into vLLM's own argument. Then the knob is in effect by construction: the code
that ran is the pinned vLLM and podium's launcher, byte for byte.

Every input and who wrote it:

- the bundle's Dockerfile and its files under ``engine/`` (the participant's), read from
  the bundle intake opened, every file's sha256 checked against the manifest;
- the spec's ``engine.vllm.images`` (the organizer's): which base images are the pinned
  vLLM;
- podium's launcher as the verifier itself ships it (``engines/vllm_launcher``): the
  bytes the bundle's copy must equal, and the command line it makes of the frozen config
  (run here, in the verifier's process, never in the engine's);
- the rebuild's base (the verifier's Docker engine, ``verifier.rebuild``): the image it
  built FROM, checked against the pin. A runner that builds nothing (a process) leaves it
  unknown, and no lever is confirmed there.

What it does not read: the engine's log, its ``/version``, its ``/metrics``, its answers.
Those are the engine's word (``verifier.harness.engine_runtime``): a first filter that
raises findings, never evidence for an allowance.

What it trusts, stated: a Dockerfile of only ``ARG``, one ``FROM ${BASE_IMAGE}``,
``WORKDIR``, ``COPY`` of ``engine/`` and the frozen config under ``/submission``, ``ENV``,
``EXPOSE``, ``LABEL``,
``ENTRYPOINT []`` and the launcher's ``CMD`` adds no code to the base; an environment
without ``LD_*`` and ``PYTHON*`` variables (but ``PYTHONPATH`` at the copied launcher,
``PYTHONUNBUFFERED``, ``PYTHONDONTWRITEBYTECODE``) loads none either, since nothing else
of the participant's is in the image to load; and a base the organizer's Docker engine
holds under the pinned name (a local image, pinned by id) or digest is the vLLM it names.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from schemas.challenge import ChallengeSpec
from schemas.manifest import Manifest
from submission.defaults import ENGINE_CONFIG_FILE, IGNORED_DIRS, IGNORED_SUFFIXES
from submission.dockerfile import DockerfileError, command, env_pairs, instructions
from verifier.evidence import VllmImage

#: the Dockerfile instructions that add no code to the base image
PLAIN = frozenset({"ARG", "FROM", "WORKDIR", "COPY", "ENV", "EXPOSE", "LABEL", "ENTRYPOINT", "CMD"})
#: where the launcher and the config go in the image (``submission init``'s Dockerfile)
SUBMISSION = "/submission"
LAUNCHER_ROOT = SUBMISSION + "/engine"
#: environment variables of the interpreter that cannot load code
PYTHON_PLAIN = frozenset({"PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE"})
_PYTHONS = ("python", "python3")


def pinned_refs(spec: ChallengeSpec) -> tuple[str, ...]:
    """The spec's pinned vLLM images (``engine.vllm.images``: each ``ref``)."""
    images = (spec.engine.vllm or {}).get("images") or {}
    return tuple(
        str(image["ref"]) for image in images.values() if isinstance(image, dict) and "ref" in image
    )


def _name(ref: str) -> str:
    return ref.split("@", 1)[0]


def pin_of(manifest: Manifest, pinned: tuple[str, ...]) -> str | None:
    """The spec's ref the manifest's base is (same name; same digest where the spec pins
    one), or None."""
    base = manifest.engine.base_image
    for ref in pinned:
        if _name(base.ref) != _name(ref):
            continue
        digest = ref.split("@", 1)[1] if "@" in ref else None
        if digest is None or digest == base.digest:
            return ref
    return None


def rebuilt_from_pin(manifest: Manifest, pinned: tuple[str, ...], rebuilt: str | None) -> bool:
    """Whether the verifier's rebuild started FROM the pinned image: ``rebuilt`` is the
    base ``verifier.rebuild.base_image_arg`` resolved on the verifier's Docker engine (a
    local image's id, or ``name@digest``), which it already checked against the manifest's
    pin."""
    ref = pin_of(manifest, pinned)
    if ref is None or not rebuilt:
        return False
    digest = manifest.engine.base_image.digest
    return rebuilt == digest or rebuilt.endswith("@" + digest)


def podium_launcher() -> dict[str, str]:
    """podium's launcher as the verifier ships it: each file's path in a bundle
    (``engine/engines/...``) and its sha256."""
    from submission.scaffold import engines_source

    src = engines_source()
    files = [src / "__init__.py"]
    for path in sorted((src / "vllm_launcher").rglob("*")):
        rel = path.relative_to(src)
        ignored = set(rel.parts) & IGNORED_DIRS or path.name.endswith(IGNORED_SUFFIXES)
        if path.is_file() and not ignored:
            files.append(path)
    return {
        f"engine/engines/{p.relative_to(src).as_posix()}": hashlib.sha256(
            p.read_bytes()
        ).hexdigest()
        for p in files
    }


def env_foreign(name: str, value: str) -> bool:
    """An environment variable that could make the interpreter or the loader run code
    other than the image's."""
    if name.startswith("LD_"):
        return True
    if name == "PYTHONPATH":
        return value.rstrip("/") != LAUNCHER_ROOT
    return name.startswith("PYTHON") and name not in PYTHON_PLAIN


def _copy_foreign(args: str, line: int) -> list[str]:
    words = args.split()
    flags = [w for w in words if w.startswith("--")]
    paths = [w for w in words if not w.startswith("--")]
    out = [f"Dockerfile:{line} COPY {f}" for f in flags if not f.startswith("--chown")]
    for source in paths[:-1]:
        clean = PurePosixPath(source.removeprefix("./")).as_posix()
        if clean not in ("engine", ENGINE_CONFIG_FILE):
            out.append(f"Dockerfile:{line} COPY {source}: not podium's launcher or the config")
    dest = paths[-1] if paths else ""
    if dest.startswith("/") and not (dest + "/").startswith(SUBMISSION + "/"):
        out.append(f"Dockerfile:{line} COPY to {dest}: outside {SUBMISSION}")
    return out


def read_dockerfile(text: str) -> tuple[tuple[str, ...] | None, list[str]]:
    """The last stage's command (ENTRYPOINT then CMD) and what the file adds to the base
    besides podium's launcher and the config."""
    try:
        steps = instructions(text)
    except DockerfileError as exc:
        return None, [f"Dockerfile: {exc.message}"]
    foreign: list[str] = []
    froms = [s for s in steps if s.name == "FROM"]
    if len(froms) != 1 or froms[0].args.split()[0] not in ("${BASE_IMAGE}", "$BASE_IMAGE"):
        foreign.append("Dockerfile: not one stage FROM ${BASE_IMAGE}")
    known: dict[str, str] = {}
    entrypoint: list[str] | None = None
    cmd: list[str] = []
    try:
        for step in steps:
            if step.name not in PLAIN:
                foreign.append(f"Dockerfile:{step.line} {step.name}")
            elif step.name == "COPY":
                foreign += _copy_foreign(step.args, step.line)
            elif step.name == "ENV":
                pairs = env_pairs(step.args, known)
                known.update(pairs)
                foreign += [
                    f"Dockerfile:{step.line} ENV {k}" for k, v in pairs.items() if env_foreign(k, v)
                ]
            elif step.name == "ENTRYPOINT":
                entrypoint = command(step.args)
            elif step.name == "CMD":
                cmd = command(step.args)
    except DockerfileError as exc:
        return None, [*foreign, f"Dockerfile: {exc.message}"]
    if entrypoint is None:
        foreign.append("Dockerfile: no ENTRYPOINT: the base image's own runs first")
    return tuple([*(entrypoint or []), *cmd]), foreign


def starts_vllm(argv: tuple[str, ...] | None) -> bool:
    """The command starts podium's launcher or vLLM's own server."""
    if not argv:
        return False
    words = list(argv)
    module = words[words.index("-m") + 1] if "-m" in words[:-1] else None
    if module in ("engines.vllm_launcher", "vllm.entrypoints.openai.api_server"):
        return True
    return PurePosixPath(words[0]).name == "vllm"


def launcher_only(argv: tuple[str, ...] | None) -> bool:
    """Exactly podium's launcher on the frozen config: no option of its own (``--vllm``
    would start another command)."""
    if argv is None or len(argv) != 4:
        return False
    python, flag, module, config = argv
    return (
        PurePosixPath(python).name in _PYTHONS
        and (flag, module) == ("-m", "engines.vllm_launcher")
        and PurePosixPath(config).name == ENGINE_CONFIG_FILE
    )


def _files_foreign(manifest: Manifest) -> list[str]:
    """Files under ``engine/`` (copied into the image) that are not podium's launcher."""
    ours = podium_launcher()
    theirs = {f.path: f.sha256 for f in manifest.files if f.path.startswith("engine/")}
    out = [
        f"{path}: not podium's launcher" if path not in ours else f"{path}: differs from podium's"
        for path, digest in sorted(theirs.items())
        if ours.get(path) != digest
    ]
    out += [f"{path}: missing" for path in sorted(set(ours) - set(theirs))]
    return out


def _serve_args(config: Mapping[str, Any], spec: ChallengeSpec) -> tuple[str, ...] | None:
    """The command line the verifier's own copy of podium's launcher makes of ``config``."""
    from engines.vllm_launcher.args import build_env, build_serve_args

    device = "cpu" if spec.hardware.accelerator == "cpu" else "cuda"
    try:
        build_env(config)
        return tuple(
            build_serve_args(
                config, model_path="/model", port=8001, host="127.0.0.1", device=device
            )
        )
    except (ValueError, OSError):
        return None


def inspect(root: Path, manifest: Manifest, spec: ChallengeSpec) -> VllmImage:
    """The static evidence of a bundle opened by intake (``root``); ``rebuilt_from_pin``
    is left unknown until the verifier has rebuilt the image (``with_rebuild``)."""
    pinned = pinned_refs(spec)
    try:
        text = (root / manifest.engine.dockerfile).read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = None
    argv, foreign = (None, ["Dockerfile: missing"]) if text is None else read_dockerfile(text)
    if not launcher_only(argv):
        foreign.append("the command is not python3 -m engines.vllm_launcher CONFIG alone")
    foreign += _files_foreign(manifest)
    config = manifest.engine.config
    env = {**(manifest.engine.env or {})}
    try:
        from engines.vllm_launcher.args import build_env

        env.update(build_env(config))
    except ValueError:
        pass  # the launcher refuses the config: serve_args says so
    foreign += [f"environment {k}" for k, v in sorted(env.items()) if env_foreign(k, str(v))]
    return VllmImage(
        base_ref=manifest.engine.base_image.ref,
        pinned=pinned,
        base_is_pinned=pin_of(manifest, pinned) is not None,
        command=argv,
        starts_vllm=starts_vllm(argv),
        foreign=tuple(foreign),
        serve_args=_serve_args(config, spec),
    )
