"""scripts/uv-flags.py hands uv the settings pip would use: every file's, the environment's
over them, lists split, other settings left out."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "uv-flags.py"


def flags(listing: str) -> list[str]:
    spec = importlib.util.spec_from_file_location("uv_flags", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result: list[str] = module.flags(listing)
    return result


def test_pips_indexes_wheel_store_and_constraints_become_uv_flags() -> None:
    listing = (
        "global.cert='/etc/ssl/certs/ca.crt'\n"
        "global.constraint='/etc/pip/constraints.txt'\n"
        "global.extra-index-url='file:///a/simple file:///b/simple'\n"
        "global.find-links='/srv/wheels'\n"
    )
    assert flags(listing) == [
        "--index-strategy", "unsafe-best-match",
        "--constraint", "/etc/pip/constraints.txt",
        "--extra-index-url", "file:///a/simple",
        "--extra-index-url", "file:///b/simple",
        "--find-links", "/srv/wheels",
    ]  # fmt: skip


def test_a_pip_variable_overrides_the_files_and_nothing_set_is_plain_uv() -> None:
    listing = ":env:.find-links='/env/wheels'\nglobal.find-links='/file/wheels'\n"
    assert flags(listing)[2:] == ["--find-links", "/env/wheels"]
    assert flags("") == ["--index-strategy", "unsafe-best-match"]
