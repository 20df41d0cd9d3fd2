"""Import heavy optional dependencies inside the command that needs them.

``require("docker", extra="docker")`` returns the module or raises a
``MissingExtraError`` whose hint is the install line of README.md that brings it: podium is
installed from its checkout with one line per role (``pip install '.[participant]'``), so a
hint names that line, never an extra alone (``podium[docker]`` is no line the README runs).
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from podium.errors import MissingExtraError

#: each extra, and the README's install lines that bring it (the first is the lightest):
#: the participant validates, packages and pushes with '.[participant]' (no torch), adds
#: the engine to self-check and the sweep extra to sweep; the organizer and viewer have one.
LINES: dict[str, tuple[str, ...]] = {
    "docker": (".[participant]", ".[organizer]"),
    "engine": (".[participant,engine]", ".[organizer]"),
    "sweep": (".[participant,engine,sweep]",),
    "gpu": (".[organizer]",),
    "data": (".[viewer]",),
    "server": (".[organizer]",),
}
#: the modules ``podium server`` needs (``server``; PostgreSQL's driver comes with ``postgres``)
SERVER_MODULES = ("starlette", "uvicorn", "sqlalchemy")
#: the modules each command's extra must provide, checked before it starts
SELFCHECK_MODULES = ("torch", "transformers")
#: torch's CPU build for a CPU challenge (tiny), as README.md installs it: PyPI's Linux torch
#: carries CUDA (several GB) that a CPU challenge never uses
CPU_TORCH = "pip install torch --index-url https://download.pytorch.org/whl/cpu"


def install_hint(extra: str) -> str:
    """The README's line for ``extra``, from podium's checkout (``pip install '.[...]'``)."""
    lines = LINES.get(extra, (f".[{extra}]",))
    first = f"pip install '{lines[0]}'"
    others = "".join(f" (or '{line}')" for line in lines[1:])
    torch = f"; for a CPU challenge, first {CPU_TORCH}" if extra == "engine" else ""
    return f"{first}{others} in podium's checkout (README.md, install){torch}"


def require(module: str, *, extra: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(
            f"this command needs the Python module {module!r}, which is not installed",
            hint=install_hint(extra),
            where=module,
        ) from exc


def require_installed(command: str, modules: tuple[str, ...], *, extra: str) -> None:
    """Every one of ``modules`` is installed (nothing imported), else a ``MissingExtraError``
    naming them all and the line that brings them: a command checks this before it starts,
    rather than dying at the first import halfway through its work."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise MissingExtraError(
            f"{command} needs {' and '.join(missing)}, which "
            f"{'is' if len(missing) == 1 else 'are'} not installed",
            hint=install_hint(extra),
            where=missing[0],
        )
