"""``python -m engines.vllm_launcher CONFIG_JSON [--port 8000] [--model /model] [--dry-run]``.

Reads the frozen engine config, prints the exact command, starts vLLM's OpenAI-compatible
server as a child on an internal loopback port, waits until it answers ``/v1/models``,
runs the warm-up when WARMUP_BRIDGE is on, and only then opens the public port's
readiness gate. ``PODIUM_VLLM_DEVICE`` (set by the image: ``cpu`` or ``cuda``) says
which vLLM build the image holds; the model folder's config.json says where
SLIDING_WINDOW goes.
SIGTERM and SIGINT are forwarded to vLLM; the launcher exits with vLLM's exit code
(128 + N when vLLM died of signal N). Exit code 2: the config cannot be turned into a
command line.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

from engines.vllm_launcher.args import (
    SERVER_MODULE,
    ConfigError,
    LauncherSettings,
    build_env,
    build_serve_args,
    drafter_copy,
    launcher_settings,
)
from engines.vllm_launcher.drafter import write_drafter_copy
from engines.vllm_launcher.proxy import ReadinessProxy
from engines.vllm_launcher.warmup import run_warmup, wait_for_models

EXIT_CONFIG = 2


def log(message: str) -> None:
    sys.stderr.write(f"[launcher] {message}\n")
    sys.stderr.flush()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m engines.vllm_launcher",
        description="Serve a frozen engine config with vLLM behind a warm-up readiness gate.",
    )
    parser.add_argument("config", type=Path, help="frozen engine-config.json")
    parser.add_argument("--port", type=int, default=8000, help="public port (default 8000)")
    parser.add_argument("--host", default="0.0.0.0", help="public address (default 0.0.0.0)")
    parser.add_argument(
        "--internal-port", type=int, default=8001, help="vLLM's loopback port (default 8001)"
    )
    parser.add_argument("--model", default="/model", help="pinned weights folder (default /model)")
    parser.add_argument("--served-model-name", help="name when the config has no SERVED_MODEL_NAME")
    parser.add_argument(
        "--weights",
        action="append",
        default=[],
        metavar="REPO=PATH",
        help="a mounted derived checkpoint (e.g. an MTP drafter); SPECULATIVE_CONFIG.model "
        "naming REPO is rewritten to PATH; repeatable",
    )
    parser.add_argument(
        "--vllm",
        default=f"{shlex.quote(sys.executable)} -m {SERVER_MODULE}",
        help=f"the command that starts vLLM's server (default: this python -m {SERVER_MODULE})",
    )
    parser.add_argument(
        "--drafter",
        default=os.environ.get("DRAFTER_PATH") or None,
        help="the mounted MTP drafter, used when SPECULATIVE_CONFIG names none "
        "(default: $DRAFTER_PATH)",
    )
    parser.add_argument(
        "--drafter-dir",
        default="/tmp/podium-drafter",
        help="writable folder for the drafter copy CENTROID_TOP_K needs (default /tmp/...)",
    )
    parser.add_argument("--dry-run", action="store_true", help="print the command and exit 0")
    parser.add_argument("--verbose", action="store_true", help="log every proxied request")
    args = parser.parse_args(argv)
    if args.port == args.internal_port:
        parser.error("--port and --internal-port must differ")
    for item in args.weights:
        if "=" not in item:
            parser.error(f"--weights must look like REPO=PATH, got {item!r}")
    return args


def load_config(path: Path) -> dict[str, Any]:
    config = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(config, dict):
        raise ConfigError("config", f"{path} must hold a JSON object")
    return config


def model_config(model: str) -> dict[str, Any] | None:
    """The checkpoint's config.json, or None when it cannot be read (no weights mounted)."""
    try:
        doc = json.loads((Path(model) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def command_line(argv: list[str], env: dict[str, str]) -> str:
    """The command as one shell line, environment assignments first."""
    assignments = [f"{key}={shlex.quote(value)}" for key, value in env.items()]
    return " ".join([*assignments, shlex.join(argv)])


def _exit_code(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        config = load_config(args.config)
        settings = launcher_settings(config)
        model_paths = dict(item.split("=", 1) for item in args.weights)
        serve_argv = build_serve_args(
            config,
            model_path=args.model,
            served_model_name=args.served_model_name,
            port=args.internal_port,
            host="127.0.0.1",
            command=shlex.split(args.vllm),
            model_paths=model_paths,
            model_config=model_config(args.model),
            device=os.environ.get("PODIUM_VLLM_DEVICE", "cuda"),
            drafter_dir=args.drafter_dir,
            drafter=args.drafter,
        )
        env = build_env(config)
        copy = drafter_copy(config, model_paths, args.drafter_dir, args.drafter)
    except (OSError, ValueError) as exc:
        log(f"cannot use the config: {exc}")
        return EXIT_CONFIG
    if "MODEL" in config:
        log(f"MODEL={config['MODEL']} is recorded; the weights served are those at {args.model}")
    if settings.precache_bench:
        log("PRECACHE_BENCH is set: ignored, this image holds no benchmark prompts to replay")
    if args.dry_run:
        print(command_line(serve_argv, env))
        return 0
    if copy is not None:
        try:
            changed = write_drafter_copy(copy)
        except (OSError, ValueError) as exc:
            log(f"cannot prepare the drafter: {exc}")
            return EXIT_CONFIG
        log(f"drafter {copy.source} served from {copy.dest} with config changes {changed}")
    log(f"starting: {command_line(serve_argv, env)}")
    return _serve(args, serve_argv, env, settings)


def _serve(
    args: argparse.Namespace,
    serve_argv: list[str],
    env: dict[str, str],
    settings: LauncherSettings,
) -> int:
    proxy = ReadinessProxy(
        args.host, args.port, "127.0.0.1", args.internal_port, verbose=args.verbose
    )
    proxy.start()
    stopping = threading.Event()
    try:
        child = subprocess.Popen(serve_argv, env={**os.environ, **env})
    except OSError as exc:
        proxy.close()
        log(f"cannot start {serve_argv[0]}: {exc}")
        return 127

    def forward(signum: int, frame: FrameType | None) -> None:
        stopping.set()
        if child.poll() is None:
            child.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)

    def alive() -> bool:
        return child.poll() is None and not stopping.is_set()

    try:
        upstream = f"http://127.0.0.1:{args.internal_port}"
        served = wait_for_models(upstream, keep_waiting=alive)
        if served is not None:
            if settings.warmup_bridge and settings.warmup_num_prompts > 0:
                log(f"warm-up: {settings.warmup_num_prompts} synthetic prompts")
                length = served.get("max_model_len")
                result = run_warmup(
                    upstream,
                    served["id"],
                    num_prompts=settings.warmup_num_prompts,
                    max_tokens=settings.warmup_max_tokens,
                    max_model_len=length if isinstance(length, int) else None,
                    keep_going=alive,
                )
                log(f"warm-up: {result.succeeded}/{result.sent} answered in {result.seconds:.1f} s")
            if alive():
                proxy.set_ready()
                log(f"ready on {args.host}:{args.port} (vLLM on 127.0.0.1:{args.internal_port})")
        code = _exit_code(child.wait())
    finally:
        proxy.close()
    log(f"vLLM exited with {code}")
    return code


if __name__ == "__main__":
    sys.exit(main())
