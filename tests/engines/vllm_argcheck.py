"""Parse launcher command lines with vLLM's own argument parser (run inside a vLLM image).

``python3 vllm_argcheck.py ARGV_JSON`` reads a JSON object ``{name: [server argv...]}``
(each argv without the command that starts the server: it begins at ``--model``) and
prints one line ``PODIUM-ARGCHECK {"results": {name: {"ok": bool, "error": str | None,
"args": {...}}}, "defaults": {...}}``: each argv's outcome, and the parser's defaults.

Each argv goes through what ``python -m vllm.entrypoints.openai.api_server`` runs before it
loads a model: ``make_arg_parser(FlexibleArgumentParser())``, ``parse_args`` and
``validate_parsed_serve_args``. The JSON options the parser takes as free dicts are then
checked against the configs vLLM builds from them, which refuse unknown fields:
``--speculative-config`` against ``SpeculativeConfig``'s fields and
``--compilation-config`` by building a ``CompilationConfig``. ``args`` holds the parsed
values of the options each argv set, so a test can see what vLLM understood.

It imports only the standard library and vLLM: it runs in the image, not in podium's env.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import sys
from typing import Any


def _jsonable(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return repr(value)


def check(argv: list[str]) -> dict[str, Any]:
    from vllm.config import CompilationConfig, SpeculativeConfig
    from vllm.entrypoints.launchers.cli_args import make_arg_parser, validate_parsed_serve_args
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = make_arg_parser(FlexibleArgumentParser())
    defaults = vars(parser.parse_args([]))
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            namespace = parser.parse_args(argv)
    except SystemExit:
        return {"ok": False, "error": stderr.getvalue().strip().splitlines()[-1:], "args": {}}
    try:
        validate_parsed_serve_args(namespace)
        spec = namespace.speculative_config
        if spec is not None:
            fields = {f.name for f in dataclasses.fields(SpeculativeConfig)}
            unknown = sorted(set(spec) - fields)
            if unknown:
                raise ValueError(f"SpeculativeConfig has no field(s) {unknown}")
        if namespace.compilation_config is not None:
            given = namespace.compilation_config
            CompilationConfig(**given) if isinstance(given, dict) else None
    except Exception as exc:  # what vLLM would raise before serving
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}", "args": {}}
    changed = {
        key: _jsonable(value)
        for key, value in vars(namespace).items()
        if defaults.get(key) != value
    }
    return {"ok": True, "error": None, "args": changed}


def defaults() -> dict[str, Any]:
    from vllm.entrypoints.launchers.cli_args import make_arg_parser
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parsed = vars(make_arg_parser(FlexibleArgumentParser()).parse_args([]))
    return {key: _jsonable(value) for key, value in parsed.items()}


def main() -> int:
    argvs: dict[str, list[str]] = json.loads(sys.argv[1])
    results = {name: check(argv) for name, argv in argvs.items()}
    out = {"results": results, "defaults": defaults()}
    print("PODIUM-ARGCHECK " + json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
