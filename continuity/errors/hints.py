"""A "did you mean" hint for a name that is close to one of the names accepted."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["did_you_mean"]


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """``"did you mean X? "`` for the accepted name closest to `name` (difflib's ratio
    of at least 0.6), else ``""``: the start of an error message's advice."""
    close = difflib.get_close_matches(name, list(choices), n=1)
    return f"did you mean {close[0]}? " if close else ""
