"""The static caller inventory of the real-send factory (`continuity.spend.real_send`).

Every module of the package is parsed with `ast`, never imported, and every way it could
reach the factory is listed: an import of its module in any form (plain, ``from``,
relative, from its package, inside a function or under ``TYPE_CHECKING``), a factory
name imported or read as an attribute, and a string that names the module or a factory
(an import by name). Only `CALLERS` may reach it: the probe child, which mints its one
send. The controller builds the grant from its types (`continuity.spend.real_grant`)
and never reaches the factory itself.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.test_architecture import module_names, resolve_from

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "continuity"
FACTORY = "continuity.spend.real_send"
FACTORIES = frozenset({"mint_real_send", "mint_granted"})
NAMES = FACTORIES | {FACTORY, "continuity/spend/real_send.py"}
CALLERS = frozenset({"continuity.spend.pilot_child"})  # the probe child mints its send


def _is_factory(name: str) -> bool:
    return name == FACTORY or name.startswith(FACTORY + ".")


def reaches(module: str, source: str, *, is_package: bool = False) -> list[str]:
    """How the module `module` (its `source`) reaches the factory; empty: it does not."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names if _is_factory(a.name)]
        elif isinstance(node, ast.ImportFrom):
            target = resolve_from(module, node, is_package)
            found += [
                f"from {target} import {a.name}"
                for a in node.names
                if _is_factory(target) or _is_factory(f"{target}.{a.name}") or a.name in FACTORIES
            ]
        elif isinstance(node, ast.Attribute) and node.attr in FACTORIES:
            found.append(f"attribute {node.attr}")
        elif isinstance(node, ast.Constant) and node.value in NAMES:
            found.append(f"string {node.value}")
    return found


def inventory() -> dict[str, list[str]]:
    """Every module of the package but the factory's own that reaches it, and how."""
    found = {}
    for module, path in module_names().items():
        if module == FACTORY:
            continue
        source = path.read_text(encoding="utf-8")
        ways = reaches(module, source, is_package=path.name == "__init__.py")
        if ways:
            found[module] = ways
    return found


def test_only_the_probe_child_reaches_the_real_send_factory() -> None:
    found = inventory()
    assert set(found) == CALLERS, found
    assert found["continuity.spend.pilot_child"] == [
        "from continuity.spend.real_send import mint_granted"
    ]


def test_the_controller_reaches_the_grant_types_only() -> None:
    source = (PACKAGE / "spend" / "controller.py").read_text(encoding="utf-8")
    assert reaches("continuity.spend.controller", source) == []
    assert "from continuity.spend.real_grant import RealGrant" in source


REACHING = [
    "import continuity.spend.real_send",
    "import continuity.spend.real_send as factory",
    "from continuity.spend.real_send import mint_granted",
    "from continuity.spend.real_send import *",
    "from continuity.spend import real_send",
    "from continuity.spend import real_send as factory",
    "from . import real_send",
    "from .real_send import mint_real_send",
    "from ..spend.real_send import RealGrant",
    "def f():\n    from continuity.spend.real_send import mint_granted\n",
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import continuity.spend.real_send\n",
    "import importlib\nimportlib.import_module('continuity.spend.real_send')",
    "send = some_module.mint_granted",
    "send = getattr(some_module, 'mint_real_send')",
    "from continuity.spend.other import mint_real_send",
]
NOT_REACHING = [
    "from continuity.spend.real_grant import RealGrant, RealSlot",
    "from continuity.spend import real_grant, real_checks",
    "from . import real_grant",
    '"""The child mints its send in `continuity.spend.real_send` (`mint_granted`)."""',
    "import continuity.spend.real_sender",
]


def test_the_walker_finds_every_form_of_reaching_the_factory() -> None:
    """The test of the test: each form is found from a module of `continuity.spend` (so
    relative imports resolve there), and imports of the grant's types, a docstring that
    names the factory and a module whose name only starts alike are not."""
    for source in REACHING:
        assert reaches("continuity.spend.somewhere", source), source
    for source in NOT_REACHING:
        assert reaches("continuity.spend.somewhere", source) == [], source
    package = "from .real_send import mint_granted"
    assert reaches("continuity.spend", package, is_package=True)


def test_importing_the_controller_or_the_pilot_routes_never_loads_the_factory() -> None:
    # The import closure, not just direct imports: the controller, the pilot's entry and
    # the doit tasks may load the grant's types, never the factory module itself.
    import subprocess
    import sys

    probe = (
        "import sys, continuity.spend.controller, continuity.roles.pilot.run, "
        "continuity.roles.pilot.smoke; "
        f"print({FACTORY!r} in sys.modules)"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout.strip()
    assert loaded == "False"
