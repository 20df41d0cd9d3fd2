"""The reference engine's launcher: a frozen engine config in, a warmed ``vllm serve`` out.

``python -m engines.vllm_launcher CONFIG_JSON`` turns every knob into ``vllm serve``
options or environment (``args``), starts vLLM on an internal loopback port, warms it
with synthetic prompts when WARMUP_BRIDGE is on (``warmup``), and holds the public port
with a readiness gate that answers 503 until then and forwards everything afterwards
(``proxy``). It runs inside the vLLM image, so it needs only the standard library and
imports nothing from the rest of podium. docs/vllm-engine.md has the knob-to-flag table.
"""

from engines.vllm_launcher.args import (
    KNOBS,
    ConfigError,
    LauncherSettings,
    build_env,
    build_serve_args,
    launcher_settings,
)

__all__ = [
    "KNOBS",
    "ConfigError",
    "LauncherSettings",
    "build_env",
    "build_serve_args",
    "launcher_settings",
]
