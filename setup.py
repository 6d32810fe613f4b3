"""The wheel's build step: the runtime tree, laid out as the checkout is.

A wheel installs ``continuity-tree/`` (the paths `continuity.installation.CODE_PATHS`
names: the package, its fixtures, doit's tasks, the toy agent, ``pyproject.toml``) and
``continuity-tree.pth``, which puts that directory on the import path. The package finds
its fixtures and tasks beside itself there, as in a checkout (the module's doc says
why). An editable install (``pip install -e .``) is left to setuptools as it is.

The paths are read from ``continuity/installation.py`` as literals: the isolated build
environment holds setuptools, not the package's dependencies.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

from setuptools import setup  # type: ignore[import-untyped,unused-ignore]
from setuptools.command.build_py import build_py  # type: ignore[import-untyped,unused-ignore]

HERE = Path(__file__).resolve().parent
_SKIP = shutil.ignore_patterns("__pycache__", "*.py[cod]", ".venv", ".mypy_cache")


def _literal(name: str) -> object:
    """The value of the module-level assignment `name` in continuity/installation.py."""
    module = ast.parse((HERE / "continuity" / "installation.py").read_text(encoding="utf-8"))
    for node in module.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == name for target in node.targets
        ):
            return ast.literal_eval(node.value)
    raise LookupError(f"continuity/installation.py assigns no {name}")


class BuildTree(build_py):  # type: ignore[misc,unused-ignore]
    """build_py for a wheel: the runtime tree and its ``.pth`` instead of bare packages."""

    def run(self) -> None:
        if self.editable_mode:
            super().run()
            return
        tree_dir = str(_literal("TREE_DIR"))
        paths = _literal("CODE_PATHS")
        assert isinstance(paths, tuple)
        build_lib = Path(self.build_lib)
        tree = build_lib / tree_dir
        shutil.rmtree(tree, ignore_errors=True)  # a file deleted since the last build
        for relative in paths:
            source, target = HERE / relative, tree / relative
            if source.is_dir():
                shutil.copytree(source, target, ignore=_SKIP)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)
        (build_lib / f"{tree_dir}.pth").write_text(f"{tree_dir}\n", encoding="utf-8")


setup(cmdclass={"build_py": BuildTree})
