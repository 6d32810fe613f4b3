"""A "did you mean" hint for a name that is close to one of the names accepted."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["did_you_mean", "did_you_mean_model"]


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """``"did you mean X? "`` for the accepted name closest to `name` (difflib's ratio
    of at least 0.6), else ``""``: the start of an error message's advice."""
    close = difflib.get_close_matches(name, list(choices), n=1)
    return f"did you mean {close[0]}? " if close else ""


def did_you_mean_model(name: str, references: Iterable[str]) -> str:
    """`did_you_mean` for a ``provider:model`` reference among `references`. A name
    without its provider (``gpt-6-mini``) is matched against their model parts, so the
    hint is the whole reference (``openai-codex:gpt-6-mini``): of two references to the
    same model, the first in `references`."""
    known = list(dict.fromkeys(references))
    if ":" in name:
        return did_you_mean(name, known)
    by_model: dict[str, str] = {}
    for reference in known:
        by_model.setdefault(reference.partition(":")[2], reference)
    close = difflib.get_close_matches(name, list(by_model), n=1)
    return f"did you mean {by_model[close[0]]}? " if close else ""
