"""Every module's exported surface: `__all__` is present, importable and complete.

Complete means every public name the module itself defines (a function, a class, or a
module-level constant or type alias) is listed; names it imports from elsewhere are
listed only when it re-exports them on purpose. Listed names must exist.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "continuity"


def _modules() -> list[str]:
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__main__":
            continue
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names.append(".".join(parts))
    return names


def defined_public_names(source: str) -> set[str]:
    """The public names a module's own top level defines."""
    names: set[str] = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {n for n in names if not n.startswith("_")}


MODULES = _modules()


def test_the_walk_finds_the_package() -> None:
    assert "continuity.errors" in MODULES and "continuity.store" in MODULES


def test_defined_public_names_sees_every_kind_of_definition() -> None:
    source = "import os\nX = 1\n_p = 2\nY: int = 3\ndef f(): pass\nclass C: pass\n"
    assert defined_public_names(source) == {"X", "Y", "f", "C"}


@pytest.mark.parametrize("name", MODULES)
def test_all_is_complete_and_importable(name: str) -> None:
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    assert isinstance(exported, list | tuple), f"{name} has no __all__"
    # A package's __all__ may also list its public submodules (docs/architecture.md,
    # "Package interfaces"), which exist whether or not they were imported yet.
    submodule = getattr(module, "__path__", None) is not None
    missing = [
        n
        for n in exported
        if not hasattr(module, n)
        and not (submodule and importlib.util.find_spec(f"{name}.{n}") is not None)
    ]
    assert missing == [], f"{name}.__all__ lists names it does not have"
    source = Path(module.__file__ or "").read_text(encoding="utf-8")
    unlisted = sorted(defined_public_names(source) - set(exported))
    assert unlisted == [], f"{name} defines public names missing from __all__"


@pytest.mark.parametrize("name", MODULES)
def test_every_error_class_lives_in_errors(name: str) -> None:
    """The error tree is drawn in one place: no module outside the `continuity.errors`
    package (its catalogue and `continuity.errors.types`) defines an exception class."""
    module = importlib.import_module(name)
    defined = [
        value.__name__
        for value in vars(module).values()
        if isinstance(value, type) and issubclass(value, BaseException) and value.__module__ == name
    ]
    assert name == "continuity.errors.types" or defined == [], f"{name} defines {defined}"
