"""Every error code the source emits is listed in `continuity/errors/__init__.py`'s catalogue.

A code is emitted wherever it appears: as ``code=`` / ``default_code =`` (plain or
f-string, up to its first placeholder), or at the head of a coded line, a string that
starts ``<code>: `` (``print(f"probe_request_invalid: {error}")``, an outcome's error
text). The scan reads the syntax tree, so a code inside an f-string counts too.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import continuity.errors

REPO = Path(__file__).resolve().parents[1]
_CODE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")
_HEAD = re.compile(r"([a-z][a-z0-9]*(?:_[a-z0-9]+)+): ")


def _leading_text(node: ast.expr) -> str | None:
    """A string literal's text, or an f-string's text up to its first placeholder."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values:
        first = node.values[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            return first.value
    return None


def emitted_codes(source: str) -> set[str]:
    codes: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.keyword) and node.arg in ("code", "default_code"):
            text = _leading_text(node.value)
            if text and _CODE.fullmatch(text.split(":")[0]):
                codes.add(text.split(":")[0])
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            named = any(
                isinstance(t, ast.Name) and t.id in ("code", "default_code") for t in targets
            )
            text = _leading_text(node.value) if named and node.value is not None else None
            if text and _CODE.fullmatch(text):
                codes.add(text)
        text = _leading_text(node) if isinstance(node, ast.expr) else None
        if text:
            match = _HEAD.match(text)
            if match:
                codes.add(match.group(1))
    return codes


def _sources() -> list[Path]:
    return [*(REPO / "continuity").rglob("*.py"), *(REPO / "rules").rglob("*.py")]


def test_the_scan_finds_codes_wherever_they_are_emitted() -> None:
    source = (
        'raise E("x", code="alpha_one")\n'
        "class C:\n    default_code = 'beta_two'\n"
        'print(f"gamma_three: {error}")\n'
        'raise E("y", code=f"delta_four:{kind}")\n'
        'outcome = O(1, None, "epsilon_five: the child died")\n'
        'note = "not a code: plain text"\n'
    )
    assert emitted_codes(source) == {
        "alpha_one",
        "beta_two",
        "gamma_three",
        "delta_four",
        "epsilon_five",
    }


def _task_names() -> set[str]:
    """doit's task names: a line headed by one is that task's summary, not a code."""
    text = "".join(p.read_text(encoding="utf-8") for p in (REPO / "rules").glob("*.py"))
    return set(re.findall(r"^def task_(\w+)", text, re.MULTILINE))


def test_every_emitted_code_is_in_the_catalogue() -> None:
    catalogue = continuity.errors.__doc__ or ""
    codes = set().union(*(emitted_codes(p.read_text(encoding="utf-8")) for p in _sources()))
    assert "lookup_budget" in _task_names()
    codes -= _task_names()
    assert len(codes) > 80  # the scan itself works
    missing = sorted(c for c in codes if not re.search(rf"\b{c}\b", catalogue))
    assert missing == []
