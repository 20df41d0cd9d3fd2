"""What a vLLM server prints about itself, read as data: its start-up arguments, its counters.

vLLM logs every argument that differs from its own default as one ``non-default args:
{...}`` line (a Python dict, some values reprs of objects), and exposes Prometheus
counters at ``/metrics``. ``verifier.harness.engine_runtime`` reads both from a running server and
``verifier.checks.runtime_mismatch`` compares them with the frozen config; this module only
parses them (pure functions, no I/O).
"""

from __future__ import annotations

import ast
import re
from typing import Any

NON_DEFAULT = re.compile(r"non-default args: (\{.*\})\s*$")
COUNTERS = {
    "generation_tokens": "vllm:generation_tokens_total",
    "prompt_tokens": "vllm:prompt_tokens_total",
    "spec_decode_draft_tokens": "vllm:spec_decode_num_draft_tokens_total",
    "spec_decode_accepted_tokens": "vllm:spec_decode_num_accepted_tokens_total",
    "prefix_cache_queries": "vllm:prefix_cache_queries_total",
    "prefix_cache_hits": "vllm:prefix_cache_hits_total",
}


def _literal(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError:  # an object's repr (a config class, an enum): kept as its text
        return ast.unparse(node)


def _quote_reprs(text: str) -> str:
    """``<Enum.NAME: 0>``-style reprs outside string literals, turned into string literals."""
    out: list[str] = []
    quote: str | None = None
    i = 0
    while i < len(text):
        ch = text[i]
        if quote is not None:
            out.append(ch)
            if ch == "\\" and i + 1 < len(text):
                out.append(text[i + 1])
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
            out.append(ch)
        elif ch == "<" and (end := text.find(">", i)) != -1:
            out.append(repr(text[i : end + 1]))
            i = end
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def parse_args_dict(text: str) -> dict[str, Any] | None:
    """A logged Python dict, its values literals where they are and repr text otherwise."""
    try:
        tree = ast.parse(_quote_reprs(text), mode="eval")
    except SyntaxError:
        return None
    if not isinstance(tree.body, ast.Dict):
        return None
    out: dict[str, Any] = {}
    for key, value in zip(tree.body.keys, tree.body.values, strict=True):
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            return None
        out[key.value] = _literal(value)
    return out


def parse_non_default_args(log: str) -> list[dict[str, Any]]:
    """Every ``non-default args: {...}`` line of a server log, parsed; unreadable ones skipped."""
    found = []
    for line in log.splitlines():
        match = NON_DEFAULT.search(line)
        if match:
            parsed = parse_args_dict(match.group(1))
            if parsed is not None:
                found.append(parsed)
    return found


def parse_counters(text: str) -> dict[str, float]:
    """The counters of ``COUNTERS`` from Prometheus text, summed over their label sets."""
    from prometheus_client.parser import text_string_to_metric_families

    wanted = {sample: name for name, sample in COUNTERS.items()}
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in wanted:
                key = wanted[sample.name]
                out[key] = out.get(key, 0.0) + float(sample.value)
    return out
