"""``python -m engines.baseline --model PATH [...]``: serve a local checkpoint.

Every option can also come from the environment, so a container is configured without
a command line: ``MODEL_PATH``, ``HOST``, ``PORT``, ``SERVED_MODEL_NAME``, ``DEVICE``,
``DTYPE``, ``MAX_MODEL_LEN``, ``SLIDING_WINDOW``, ``QUANTIZATION``, ``LOGIT_CELLS``,
``ENGINE_CLASS`` (``module:Class``, a ``BaselineEngine`` subclass), ``ATTENTION``,
``SELF_TEST`` (``auto``, ``on``, ``off``), ``SELF_TEST_REPORT``. ``--config FILE``
(or ``ENGINE_CONFIG``) reads a frozen engine config (the submission's
``engine-config.json``); of its knobs the baseline engine uses those in
``engines.baseline.config.KNOBS`` and no other. Precedence: command line, then the
config file, then the environment, so the frozen config is what runs in a container.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from engines.baseline.app import serve
from engines.baseline.config import read_config
from engines.baseline.load import QUANTIZATIONS
from engines.baseline.model import BaselineEngine


def _engine_class(spec: str) -> type[BaselineEngine]:
    module_name, _, attr = spec.partition(":")
    if not attr:
        raise SystemExit(f"--engine-class must look like module:Class, got {spec!r}")
    cls = getattr(importlib.import_module(module_name), attr)
    if not (isinstance(cls, type) and issubclass(cls, BaselineEngine)):
        raise SystemExit(f"{spec} is not a BaselineEngine subclass")
    return cls


def _settings(argv: list[str] | None) -> dict[str, str]:
    """The environment, overlaid with the knobs of ``--config``/``ENGINE_CONFIG``."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--config", default=os.environ.get("ENGINE_CONFIG"))
    known, _ = pre.parse_known_args(argv)
    env = dict(os.environ)
    if known.config:
        env.update(read_config(known.config))
    return env


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    env = _settings(argv)
    parser = argparse.ArgumentParser(
        prog="python -m engines.baseline",
        description="Serve a local transformers checkpoint over vLLM's OpenAI-compatible API.",
    )
    parser.add_argument(
        "--config", default=env.get("ENGINE_CONFIG"), help="frozen engine config (JSON)"
    )
    parser.add_argument("--model", default=env.get("MODEL_PATH"), help="local model folder")
    parser.add_argument("--host", default=env.get("HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(env.get("PORT", "8000")))
    parser.add_argument("--served-model-name", default=env.get("SERVED_MODEL_NAME"))
    parser.add_argument(
        "--device", default=env.get("DEVICE", "cpu"), choices=["auto", "cpu", "cuda"]
    )
    parser.add_argument(
        "--dtype",
        default=env.get("DTYPE", "float32"),
        choices=["auto", "float32", "bfloat16", "float16"],
    )
    parser.add_argument(
        "--max-model-len",
        type=int,
        default=int(env["MAX_MODEL_LEN"]) if env.get("MAX_MODEL_LEN") else None,
    )
    parser.add_argument(
        "--sliding-window",
        type=int,
        default=int(env["SLIDING_WINDOW"]) if env.get("SLIDING_WINDOW") else None,
        help="local attention window of the sliding layers (the checkpoint's own if unset)",
    )
    parser.add_argument(
        "--quantization",
        default=env.get("QUANTIZATION") or None,
        choices=list(QUANTIZATIONS),
        help="round every weight matrix to signed integers, one scale per tensor",
    )
    parser.add_argument(
        "--logit-cells",
        type=int,
        default=int(env["LOGIT_CELLS"]) if env.get("LOGIT_CELLS") else None,
        help="float32 logit cells (positions x vocabulary) one scoring chunk may hold",
    )
    parser.add_argument(
        "--attention",
        default=env.get("ATTENTION") or None,
        help="attention implementation to serve with (transformers' default, sdpa, if unset)",
    )
    parser.add_argument(
        "--self-test",
        default=env.get("SELF_TEST", "auto"),
        choices=["auto", "on", "off"],
        help="prove the attention path against eager before serving (auto: on CUDA only)",
    )
    parser.add_argument(
        "--self-test-report",
        default=env.get("SELF_TEST_REPORT") or None,
        help="write what the attention self-test found to this file (JSON)",
    )
    parser.add_argument("--engine-class", default=env.get("ENGINE_CLASS"), help="module:Class")
    parser.add_argument("--log-requests", action="store_true", help="log each request to stderr")
    args = parser.parse_args(argv)
    if not args.model:
        parser.error("--model (or MODEL_PATH) is required")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    serve(
        args.model,
        args.host,
        args.port,
        served_model_name=args.served_model_name,
        device=args.device,
        dtype=args.dtype,
        max_model_len=args.max_model_len,
        engine_kwargs={  # only what was set: an engine subclass may not know the options
            key: value
            for key, value in (
                ("sliding_window", args.sliding_window),
                ("quantization", args.quantization),
                ("logit_cells", args.logit_cells),
                ("attention", args.attention),
                ("self_test", {"auto": None, "on": True, "off": False}[args.self_test]),
            )
            if value is not None
        },
        self_test_report=args.self_test_report,
        engine_class=_engine_class(args.engine_class) if args.engine_class else BaselineEngine,
        quiet=not args.log_requests,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
