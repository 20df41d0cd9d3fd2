"""Import heavy optional dependencies inside the command that needs them.

``require("docker", extra="docker")`` returns the module or raises a
``MissingExtraError`` whose hint is the exact pip line to run.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from podium.errors import MissingExtraError


def require(module: str, *, extra: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(
            f"this command needs the Python module {module!r}, which is not installed",
            hint=f"pip install 'podium[{extra}]'",
            where=module,
        ) from exc
