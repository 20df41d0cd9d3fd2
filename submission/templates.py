"""The text ``podium submission init`` writes: podium.toml, Dockerfiles, README.

Templates are plain ``str.format`` strings; values are quoted with ``json.dumps``, which
is a valid TOML basic string and a valid Dockerfile JSON-array element.
"""

from __future__ import annotations

import json
import re
from typing import Any

TOML = """\
# podium submission: what you tune and how your engine is built.
# Check it with `podium submission validate .`; measure it with `podium submission selfcheck .`;
# package it with `podium submission package .`.

# The challenge this entry competes in (`podium challenge list`).
challenge = {challenge}
# Your team and this entry: 1-64 letters, digits, '.', '_' or '-'. The bundle is TEAM-ENTRY.tar.gz.
team = {team}
entry = {entry}

[engine]
# baseline: podium's transformers engine; vllm: vLLM's server driven by [engine.config];
# custom: your own server speaking podium's engine protocol (see the Dockerfile's comments).
kind = {kind}
# The image your Dockerfile starts FROM (it must use ARG BASE_IMAGE + FROM ${{BASE_IMAGE}}).
# Freezing pins it to a digest; the verifier rebuilds from that digest, never from the tag.
base_image = {base_image}
# The port the engine listens on inside the container (0.0.0.0:PORT).
port = {port}
# The model name the engine reports at /v1/models and accepts in requests.
served_model_name = {served_model_name}

[engine.config]
# The knobs, as KEY = value. `podium submission knobs .` lists every knob this challenge
# allows: what it does, the values it accepts, and which engine kinds act on it.
# This table is the only place a knob is set: packaging writes it into the bundle as
# engine-config.json, which the engine reads at start-up (`validate` names the knobs the
# chosen engine kind ignores).
{config}
[engine.env]
# Extra environment variables for the engine process (strings only), set by the verifier
# when it starts the container. Example: VLLM_LOGGING_LEVEL = "WARNING"

# [reported]
# Your own measurements, checked by the verifier's reproduction rule. Example:
# tps = 510.58
# ppl = 2.3929
"""

README = """\
# {team} / {entry}

A podium submission for the `{challenge}` challenge, engine kind `{kind}`.

    podium submission validate .            # every problem at once, with a hint each
    podium submission selfcheck .           # the organizers' measurement, on public prompts
    podium submission package . -o dist     # freeze, bundle dist/{team}-{entry}.tar.gz, build

- `podium.toml`: challenge, team, entry, engine kind, base image, port and the engine knobs
  (`[engine.config]`, the one place a knob is set).
- `Dockerfile`: builds the engine image. Keep `ARG BASE_IMAGE` / `FROM ${{BASE_IMAGE}}`: the
  verifier passes the frozen base image digest there.
- `engine/`: the engine sources copied into the image (`PYTHONPATH=/submission/engine`).

Packaging writes `engine-config.json` (the knobs of `[engine.config]`) into the bundle, and
the image's command reads it; the directory keeps no copy of it.

The model is never bundled: the verifier mounts its own pinned copy read-only at `/model`.
Packaging is deterministic: the same directory gives the same bytes (set `SOURCE_DATE_EPOCH`
to pin the manifest's `created` time on a fresh checkout).
"""

PROTOCOL = """\
# What the verifier does with this image (docs/engine-protocol.md has the details):
#   - builds it with no cache and no network (a RUN step fetches nothing: see below),
#     passing --build-arg BASE_IMAGE=<the frozen digest>;
#   - runs it with no network, a read-only root, /tmp as scratch, all capabilities dropped;
#   - mounts the challenge's pinned model read-only at /model (never bundle weights);
#   - sets the [engine.env] variables of podium.toml, then talks HTTP to 0.0.0.0:PORT.
"""

CUSTOM_PROTOCOL = (
    PROTOCOL
    + """\
#
# The engine must serve, as vLLM's OpenAI-compatible server does:
#   GET  /health               200 only once the engine is ready (finish any warm-up first)
#   GET  /v1/models            {"object": "list", "data": [{"id": SERVED_MODEL_NAME, ...}]}
#   POST /v1/completions       "prompt" as a list of token ids; max_tokens, temperature, top_p,
#                              top_k, seed, ignore_eos, add_special_tokens: false;
#                              prompt_logprobs: k -> choices[0].prompt_logprobs, one entry per
#                              prompt position ({"<token id>": {"logprob": x, ...}}, the actual
#                              token always present, position 0 null);
#                              return_token_ids: true -> choices[0].token_ids (generated ids)
#   POST /v1/chat/completions  "messages" with the chat template applied by the engine; same
#                              sampling fields and return_token_ids; non-streaming answers
# The knobs of [engine.config] are in /submission/engine-config.json (a JSON object).
# Logprobs are natural-log probabilities (<= 0), never logits. The same code path must
# serve every request: the verifier checks generated tokens against teacher-forced argmax.
"""
)

DOCKERFILE = """\
# The {kind} engine image of this submission.
{protocol}
ARG BASE_IMAGE={base_image}
FROM ${{BASE_IMAGE}}
WORKDIR /submission
{copies}
# The build has no network, here and at the verifier: what the image needs comes from this
# directory or from the base image. Extra Python packages are wheels kept in the entry:
#   pip download --only-binary=:all: --platform manylinux2014_x86_64 \\
#       --python-version <the base image's, e.g. 3.11> -d wheels/ -r requirements.txt
# then uncomment:
# COPY wheels/ requirements.txt /submission/
# RUN python3 -m pip install --no-index --find-links /submission/wheels \\
#         -r /submission/requirements.txt
ENV PYTHONPATH=/submission/engine \\
    MODEL_PATH=/model \\
    HOST=0.0.0.0 \\
    PORT={port}
EXPOSE {port}
{entrypoint}CMD {cmd}
"""

BASELINE_COPIES = """\
COPY engine/ /submission/engine/
COPY engine-config.json /submission/"""


def toml_value(value: Any) -> str:
    """A TOML literal for a config value (strings, numbers, booleans, inline tables)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, dict):
        inner = ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


#: ``[engine.config]`` of an entry whose engine runs as its defaults have it
NO_KNOBS = """\
# None set: the engine runs with its own defaults. Add a knob to change one, for example
# MAX_MODEL_LEN = 4096
"""


def toml_table(values: dict[str, Any]) -> str:
    return "".join(f"{toml_key(key)} = {toml_value(value)}\n" for key, value in values.items())


def cmd_json(argv: list[str]) -> str:
    return json.dumps(argv)
