"""Every error code the source raises is listed in `continuity/errors.py`'s catalogue."""

from __future__ import annotations

import re
from pathlib import Path

import continuity.errors

REPO = Path(__file__).resolve().parents[1]
# code="...", default_code = "...", and f-string codes up to their first placeholder.
_CODE = re.compile(r'\b(?:default_)?code\s*=\s*f?"([a-z0-9_]+)(?::\{[^}]*\})?"')


def _raised_codes() -> set[str]:
    sources = [*(REPO / "continuity").rglob("*.py"), *(REPO / "rules").rglob("*.py")]
    return {m.group(1) for path in sources for m in _CODE.finditer(path.read_text())}


def test_every_raised_code_is_in_the_catalogue() -> None:
    catalogue = continuity.errors.__doc__ or ""
    codes = _raised_codes()
    assert len(codes) > 80  # the scan itself works
    missing = sorted(c for c in codes if not re.search(rf"\b{c}\b", catalogue))
    assert missing == []
