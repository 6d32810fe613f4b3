"""The fast tier's list of slow tests names only tests that exist."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO, SLOW_LIST, slow_entries


def _functions(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
            "test"
        ):
            names.add(node.name)
        if isinstance(node, ast.ClassDef):
            for inner in node.body:
                if isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef):
                    names.add(f"{node.name}::{inner.name}")
    return names


def test_every_slow_entry_names_a_test_module_or_function() -> None:
    entries = slow_entries(SLOW_LIST.read_text(encoding="utf-8"))
    assert len(entries) > 50
    missing = []
    for entry in sorted(entries):
        module, _, function = entry.partition("::")
        path = REPO / module
        exists = path.is_file() and path.name.startswith("test_")
        if not exists or (function and function not in _functions(path)):
            missing.append(entry)
    assert missing == []


def test_entries_are_read_without_comments_or_blank_lines() -> None:
    text = "# a comment\n\ntests/a.py\ntests/b.py::test_x  # why\n"
    assert slow_entries(text) == {"tests/a.py", "tests/b.py::test_x"}
