"""The sandbox's SDK (`continuity.agents.sandbox.SDK_FILES`) is closed under import.

An outside agent's sandbox binds only `SDK_FILES` under ``/cap/sdk/continuity/``: a
module of continuity that one of them imports, and that the list misses, is absent
there, and every adapter importing the SDK fails to start. These tests read the files'
imports (``ast``, no sandbox needed): every import of a continuity module, absolute or
relative, at module level or inside a function (``from continuity.x import y`` where
``y`` is a module counts as importing ``y``), must land on a file the SDK binds, and so
must every package it passes through and every package an SDK file is in. Imports
under ``if TYPE_CHECKING:`` never run and are left out.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

from continuity.agents.sandbox import SDK_FILES

PACKAGE = Path(__file__).resolve().parents[2] / "continuity"


def _module_name(relative: str) -> str:
    """``errors/__init__.py`` -> ``continuity.errors``; ``agents/sdk.py`` ->
    ``continuity.agents.sdk``."""
    parts = ["continuity", *relative.removesuffix(".py").split("/")]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _module_file(module: str) -> str | None:
    """The file of continuity module `module`, relative to the package (None when no
    module or package of that name exists)."""
    path = "/".join(module.split(".")[1:])
    candidates = [f"{path}/__init__.py", f"{path}.py"] if path else ["__init__.py"]
    return next((c for c in candidates if (PACKAGE / c).is_file()), None)


def _type_checking(node: ast.AST) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node of `tree` except the bodies of ``if TYPE_CHECKING:`` (their ``else``
    runs, and is kept)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and _type_checking(node):
            stack.extend(node.orelse)
        else:
            stack.extend(ast.iter_child_nodes(node))


def imported_modules(relative: str, source: str | None = None) -> set[str]:
    """The continuity modules file `relative` (under the package; its text `source`, by
    default read from the file) imports at run time: each module an import names, and
    each name a ``from`` import takes that is itself a module (``from continuity.errors
    import hints``)."""
    package = _module_name(relative)
    if not relative.endswith("__init__.py"):
        package = package.rpartition(".")[0]
    if source is None:
        source = (PACKAGE / relative).read_text(encoding="utf-8")
    found: set[str] = set()
    for node in _runtime_nodes(ast.parse(source, filename=relative)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:  # relative: from the file's package, up level - 1 packages
                parts = package.split(".")
                module = ".".join([*parts[: len(parts) - node.level + 1], *module.split(".")])
                module = module.rstrip(".")
            found.add(module)
            found.update(
                f"{module}.{a.name}" for a in node.names if _module_file(f"{module}.{a.name}")
            )
    return {m for m in found if m == "continuity" or m.startswith("continuity.")}


def missing_from_sdk(files: Iterable[str]) -> dict[str, list[str]]:
    """For each of `files` (the SDK, relative to the package), the files its continuity
    imports need that `files` leave out: the module's own file and the ``__init__.py``
    of every package on its way, and of the packages the file itself is in (``<no
    module M>`` for an import no file answers)."""
    bound = set(files)
    missing: dict[str, list[str]] = {}
    for relative in sorted(bound):
        needed: set[str] = set()
        # importing the file itself runs the __init__.py of each package it is in
        for module in [_module_name(relative), *imported_modules(relative)]:
            parts = module.split(".")
            for depth in range(1, len(parts) + 1):
                prefix = ".".join(parts[:depth])
                needed.add(_module_file(prefix) or f"<no module {prefix}>")
        if gaps := sorted(needed - bound):
            missing[relative] = gaps
    return missing


def test_every_continuity_import_of_the_sdk_is_bound_into_the_sandbox() -> None:
    assert missing_from_sdk(SDK_FILES) == {}


def test_the_sdk_files_exist_and_the_forwarder_imports_no_continuity_module() -> None:
    assert [name for name in SDK_FILES if not (PACKAGE / name).is_file()] == []
    # /cap/forward.py runs isolated (python -I -S): no continuity module is importable
    assert imported_modules("agents/cap_forward.py") == set()


def test_a_module_the_sdk_imports_but_leaves_out_is_found() -> None:
    """The check finds what it exists to find: the SDK without errors/hints.py (which
    continuity.errors imports), without a package's __init__.py, and a module that
    imports a submodule through ``from package import module``."""
    without_hints = tuple(name for name in SDK_FILES if name != "errors/hints.py")
    assert missing_from_sdk(without_hints) == {"errors/__init__.py": ["errors/hints.py"]}
    without_package = tuple(name for name in SDK_FILES if name != "agents/__init__.py")
    assert set(missing_from_sdk(without_package)) == {"agents/protocol.py", "agents/sdk.py"}
    assert all(v == ["agents/__init__.py"] for v in missing_from_sdk(without_package).values())
    assert {"continuity.errors.hints", "continuity.errors.types"} <= imported_modules(
        "errors/__init__.py"
    )
    assert imported_modules("agents/protocol.py") == {
        "continuity.errors",  # AdapterError is a name, not a module
        "continuity.nesting",
    }


def test_relative_function_local_and_type_checking_imports_are_read_as_python_runs_them() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "from . import hints\n"
        "from .types import AdapterError\n"
        "from ..nesting import MAX_DEPTH\n"
        "if TYPE_CHECKING:\n"
        "    from continuity.store import Store\n"
        "else:\n"
        "    import continuity.digest\n"
        "def late():\n"
        "    from continuity.agents import protocol\n"
    )
    assert imported_modules("errors/__init__.py", source) == {
        "continuity.errors",
        "continuity.errors.hints",
        "continuity.errors.types",
        "continuity.nesting",
        "continuity.digest",
        "continuity.agents",
        "continuity.agents.protocol",
    }
    assert imported_modules("agents/sdk.py", "from .protocol import Hello\n") == {
        "continuity.agents.protocol"
    }
