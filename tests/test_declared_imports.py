"""Every third-party module product code imports is installed by the install of its role.

The suite runs in a ``dev`` install, which has everything: an import that only ``dev`` or
``bench`` provides (``httpx`` in the organizer's runtime stage, once) passes every other test
and fails in a user's ``pip install '.[organizer]'``. This test reads the imports from the
source with ``ast`` (the same walk as ``test_import_graph``) and the dependencies from
``pyproject.toml``, and asks, for each import, whether the distribution that provides the
module is in the closure of what the role's line installs (core plus the role's extras,
followed through the installed distributions' own requirements, their markers evaluated).

- A module-level import runs on ``import`` of the module, so it must come with the core,
  except in the modules that only an extra's command loads (``EXTRA_ONLY``).
- An import inside a function must come with one of the roles that run the package
  (``ROLES``); ``dev`` and ``bench`` are no role.
- ``require(MODULE, extra=EXTRA)``'s hint names ``EXTRA``: ``MODULE`` must come with it.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections.abc import Iterator
from functools import cache
from importlib import metadata
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import Requirement
from test_import_graph import PACKAGES, _imports, modules

ROOT = Path(__file__).resolve().parents[1]

#: the roles that run each package (the longest matching prefix wins): the extras its lazy
#: imports may come from. The participant packages, the organizer verifies, the viewer reads;
#: ``podium`` (the base) and the CLI serve all three.
ROLES: dict[str, tuple[str, ...]] = {
    "schemas": (),
    "podium": ("participant", "organizer", "viewer"),
    "submission": ("participant",),
    # the sweep's own line: pip install '.[participant,engine,sweep]' (its command names it)
    "submission.sweep": ("participant", "engine", "sweep"),
    "verifier": ("organizer",),
    "leaderboard": ("viewer", "organizer"),
    "engines": ("engine", "vllm"),
    # the door's client (participants, workers) needs the core; its server the organizer's
    "competition": ("participant", "organizer"),
}

#: modules loaded only by a command that needs an extra: their module-level imports may come
#: from that extra (the command imports them lazily, behind ``require``).
EXTRA_ONLY: dict[str, str] = {
    "engines.baseline": "engine",
    "submission.sweep.plot": "sweep",
    # podium server checks the server extra before it imports these (require_installed)
    "competition.app": "server",
    "competition.db": "server",
    "competition.server": "server",
    "competition.workers": "server",
}

#: import names whose distribution is not installed beside the suite, so metadata cannot say
#: (the GPU's NVML binding comes with the ``gpu`` extra's ``nvidia-ml-py``).
NOT_INSTALLED = {"pynvml": "nvidia-ml-py"}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@cache
def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _own_requirements(extras: frozenset[str]) -> list[Requirement]:
    project = _pyproject()["project"]
    found = [Requirement(r) for r in project["dependencies"]]
    pending, seen = list(extras), set()
    while pending:
        extra = pending.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for line in project["optional-dependencies"][extra]:
            req = Requirement(line)
            if _normal(req.name) == "podium":
                pending.extend(req.extras)
            else:
                found.append(req)
    return found


def _applies(req: Requirement, extras: set[str]) -> bool:
    if req.marker is None:
        return True
    env = {"extra": ""}
    if Marker(str(req.marker)).evaluate(env):
        return True
    return any(Marker(str(req.marker)).evaluate({"extra": e}) for e in extras)


@cache
def installed_by(extras: frozenset[str]) -> frozenset[str]:
    """The distributions ``pip install '.[EXTRAS]'`` brings, as far as this venv can tell."""
    closure: set[str] = set()
    pending = [(r, set(r.extras)) for r in _own_requirements(extras)]
    while pending:
        req, wanted = pending.pop()
        name = _normal(req.name)
        key = name + "[" + ",".join(sorted(wanted)) + "]"
        if key in closure:
            continue
        closure.update({key, name})
        try:
            requires = metadata.requires(req.name) or []
        except metadata.PackageNotFoundError:
            continue  # not installed beside the suite: its own requirements stay unknown
        for line in requires:
            sub = Requirement(line)
            if _applies(sub, wanted):
                pending.append((sub, set(sub.extras)))
    return frozenset(n for n in closure if "[" not in n)


@cache
def _providers() -> dict[str, list[str]]:
    return metadata.packages_distributions()


def distributions_of(top: str) -> set[str]:
    if top in NOT_INSTALLED:
        return {NOT_INSTALLED[top]}
    return {_normal(d) for d in _providers().get(top, [])}


def _role(module: str, table: dict[str, tuple[str, ...]] | dict[str, str]) -> str | None:
    best = None
    for prefix in table:
        if (module == prefix or module.startswith(prefix + ".")) and (
            best is None or len(prefix) > len(best)
        ):
            best = prefix
    return best


def third_party(node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    if isinstance(node, ast.ImportFrom):
        if node.level or node.module is None:
            return
        names = [node.module]
    else:
        names = [alias.name for alias in node.names]
    for name in names:
        top = name.split(".")[0]
        if top not in sys.stdlib_module_names and top not in PACKAGES:
            yield top


def _eager(tree: ast.Module) -> set[int]:
    """The ids of the imports that run when the module is loaded (not inside a def)."""
    lazy: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            lazy.update(id(n) for n in ast.walk(node) if isinstance(n, ast.Import | ast.ImportFrom))
    return {id(n) for n in _imports(tree)} - lazy


def undeclared(name: str, source: str) -> list[str]:
    """What ``name``'s source imports that no install of its role brings, one line each."""
    tree = ast.parse(source)
    eager = _eager(tree)
    roles = ROLES[_role(name, ROLES) or "schemas"]
    extra_only = _role(name, EXTRA_ONLY)
    core = installed_by(frozenset())
    problems: list[str] = []
    for node in _imports(tree):
        for top in third_party(node):
            dists = distributions_of(top)
            if id(node) in eager:
                allowed = installed_by(frozenset({EXTRA_ONLY[extra_only]})) if extra_only else core
                where = f"the core{f' or [{EXTRA_ONLY[extra_only]}]' if extra_only else ''}"
            else:
                allowed = installed_by(frozenset(roles)) if roles else core
                where = f"[{','.join(roles)}]" if roles else "the core"
            if not dists & allowed:
                problems.append(f"{name}:{node.lineno} imports {top!r}, which {where} lacks")
    for call in ast.walk(tree):
        if not (isinstance(call, ast.Call) and getattr(call.func, "id", None) == "require"):
            continue
        module = call.args[0].value if call.args and isinstance(call.args[0], ast.Constant) else ""
        extra = next((k.value for k in call.keywords if k.arg == "extra"), None)
        if isinstance(extra, ast.Constant) and isinstance(module, str):
            top = module.split(".")[0]
            if not distributions_of(top) & installed_by(frozenset({extra.value})):
                problems.append(
                    f"{name}:{call.lineno} hints [{extra.value}] for {module!r}, which it lacks"
                )
    return problems


def test_every_product_import_comes_with_its_roles_install() -> None:
    problems = [
        line
        for name, path in sorted(modules().items())
        for line in undeclared(name, path.read_text(encoding="utf-8"))
    ]
    assert not problems, "\n".join(problems)


def test_an_import_only_dev_installs_is_caught() -> None:
    """The guard catches what it was made for: ``httpx`` (dev, bench) in the organizer's code."""
    lazy = "def observe():\n    import httpx\n    return httpx\n"
    assert undeclared("verifier.harness.engine_runtime", lazy) == [
        "verifier.harness.engine_runtime:2 imports 'httpx', which [organizer] lacks"
    ]
    eager = "import torch\n"
    assert undeclared("submission.validate", eager) == [
        "submission.validate:1 imports 'torch', which the core lacks"
    ]
    hint = "def f():\n    require('pyarrow', extra='docker')\n"
    assert undeclared("podium.cli.app", hint) == [
        "podium.cli.app:2 hints [docker] for 'pyarrow', which it lacks"
    ]


def test_the_closure_follows_the_role_extras() -> None:
    organizer = installed_by(frozenset({"organizer"}))
    assert {"docker", "torch", "transformers", "httpx2", "requests"} <= organizer
    assert "httpx" not in organizer, "httpx must come only with dev and bench"
    assert "torch" not in installed_by(frozenset()), "the core installs no torch"
