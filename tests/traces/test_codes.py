"""The validation codes table: complete, documented, and the only source of codes."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

from continuity.errors.catalogue import ENTRIES
from continuity.traces.validate import codes
from continuity.traces.validate.codes import TRACE_CODES, TraceCode

PACKAGE = Path(codes.__file__).parent
TRACES_PAGE = Path(__file__).resolve().parents[2] / "docs" / "traces.md"


def _emitted_codes() -> set[str]:
    """Constant first arguments of every ``ctx.add(...)`` / ``issue(...)`` call in the
    package, and every other code-valued constant (codes chosen before they are added;
    mypy checks those against `TraceCode`)."""
    found: set[str] = set()
    for path in PACKAGE.glob("*.py"):
        if path.name == "codes.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and node.args:
                name = getattr(node.func, "attr", getattr(node.func, "id", ""))
                first = node.args[0]
                if name in ("add", "issue") and isinstance(first, ast.Constant):
                    found.add(str(first.value))
            if isinstance(node, ast.Constant) and node.value in TRACE_CODES:
                found.add(str(node.value))  # a code chosen before it is added
    return found


def test_the_table_and_the_type_list_the_same_codes() -> None:
    assert list(TRACE_CODES) == list(get_args(TraceCode))


def test_every_code_raised_is_in_the_table_and_every_code_in_the_table_is_raised() -> None:
    emitted = _emitted_codes()
    assert sorted(emitted - set(TRACE_CODES)) == []
    assert sorted(set(TRACE_CODES) - emitted) == []


def test_every_code_is_documented_on_the_traces_page_and_the_error_catalogue() -> None:
    page = TRACES_PAGE.read_text(encoding="utf-8")
    catalogued = {entry.code for entry in ENTRIES}
    for code in TRACE_CODES:
        assert f"| `{code}` |" in page, code
        assert code in catalogued, code
