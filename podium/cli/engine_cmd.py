"""``podium engine``: run podium's engines as plain processes, inspect the vLLM mapping."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from podium.cli.options import JsonOpt
from podium.cli.output import emit, emit_line, set_json
from podium.errors import UsageError
from podium.extras import require
from podium.untrusted import text

app = typer.Typer(help="Engines: the baseline server and the vLLM launcher.", no_args_is_help=True)

ENGINES = ("baseline",)


def model_path(model: str) -> Path:
    """``tiny`` names the shipped model; anything else is a local folder."""
    if model == "tiny":
        from verifier.datasets import shipped_path

        return shipped_path("tiny/model")
    path = Path(model)
    if not (path / "config.json").is_file():
        raise UsageError(
            f"{model} is not a model folder (no config.json)",
            hint="pass a local transformers checkpoint, or `tiny` for the shipped model",
        )
    return path


@app.command("serve")
def serve_cmd(
    engine: Annotated[str, typer.Argument(help="Which engine: baseline.")],
    model: Annotated[str, typer.Option(help="A local model folder, or `tiny`.")] = "tiny",
    host: Annotated[str, typer.Option(help="Address to bind (keep 127.0.0.1 off a sandbox).")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    served_model_name: Annotated[
        str | None, typer.Option(help="Name at /v1/models (default: the folder's name).")
    ] = None,
    device: Annotated[
        str, typer.Option(help="cpu, cuda, or auto (cuda when there is a GPU).")
    ] = "cpu",
    dtype: Annotated[
        str, typer.Option(help="float32, bfloat16, float16, or auto (the checkpoint's).")
    ] = "float32",
    max_model_len: Annotated[int | None, typer.Option(help="Longest prompt + output.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Serve a model with the baseline engine as a plain process (Ctrl-C stops it).

    It speaks the protocol in docs/engine-protocol.md, the same as in its container.
    With --json it prints one line, {"url": ...}, once it listens.

    Examples:

      podium engine serve baseline --model tiny --port 8000

      podium engine serve baseline --model ./my-checkpoint --device cuda --dtype bfloat16
    """
    set_json(json_out)
    if engine not in ENGINES:
        raise UsageError(f"unknown engine {engine!r}", hint=f"choose one of: {', '.join(ENGINES)}")
    require("torch", extra="engine")
    require("transformers", extra="engine")
    from engines.baseline import serve

    serve(
        model_path(model),
        host,
        port,
        served_model_name=served_model_name,
        device=device,
        dtype=dtype,
        max_model_len=max_model_len,
        quiet=False,
        on_ready=(lambda url: emit_line({"url": url})) if json_out else None,
    )


@app.command("vllm-args")
def vllm_args_cmd(
    config: Annotated[
        Path, typer.Argument(help="An engine config (.json, .toml or KEY=VALUE env).")
    ],
    port: Annotated[int, typer.Option(help="The port vLLM listens on.")] = 8000,
    drafter: Annotated[
        str, typer.Option(help="Where the MTP drafter is mounted (for an mtp config).")
    ] = "/drafter",
    device: Annotated[str, typer.Option(help="The image's vLLM build: cuda or cpu.")] = "cuda",
    json_out: JsonOpt = False,
) -> None:
    """Print the vLLM server command and environment a frozen config turns into.

    Example: podium engine vllm-args winning.env
    """
    from engines.vllm_launcher.args import build_env, build_serve_args, drafter_copy
    from schemas.engine_config import load_engine_config

    set_json(json_out)
    knobs = load_engine_config(config)
    copy_dir = "/tmp/podium-drafter"
    try:
        argv = build_serve_args(
            knobs,
            model_path="/model",
            served_model_name=None,
            port=port,
            host="0.0.0.0",
            device=device,
            drafter=drafter,
            drafter_dir=copy_dir,
        )
        env = build_env(knobs)
        copy = drafter_copy(knobs, drafter=drafter, drafter_dir=copy_dir)
    except ValueError as exc:
        raise UsageError(str(exc), where=str(config)) from None
    out: dict[str, object] = {"argv": argv, "env": env}
    if copy is not None:  # CENTROID_TOP_K: the launcher serves a copy of the drafter
        out["drafter_copy"] = {"from": copy.source, "to": copy.dest, "config": copy.config}

    def human(con: Console) -> None:
        con.print(text(" ".join(argv), multiline=False))
        for k, v in env.items():
            con.print(text(f"{k}={v}"))

    emit(out, human)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="engine")
