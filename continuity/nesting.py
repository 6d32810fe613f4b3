"""How deep a JSON document nests, found without decoding it.

A decoder recurses once per level: a line of 100,000 ``[`` is a RecursionError (or a
crash) inside it. Every JSON document continuity reads from another process (an
adapter's CAP/0 line, a request to the model proxy) is checked here first, in time
linear in its size for documents within the limit.
"""

from __future__ import annotations

import re

__all__ = ["MAX_DEPTH", "too_deep"]

# Deeper than any message continuity exchanges (a chat request nests about 8 levels).
MAX_DEPTH = 64

_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_PAIR = re.compile(rb"\[\]|\{\}")
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")


def too_deep(raw: bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether `raw`, read as JSON, nests deeper than `limit` arrays and objects.

    Brackets inside strings do not count. Each pass removes the innermost pairs, so a
    document within the limit takes at most `limit` passes over its brackets. Of a
    malformed document (unbalanced brackets), more than `limit` brackets left open is
    too deep; fewer is left to the decoder to refuse."""
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return False
    outside = _ESCAPE.sub(b"", raw).split(b'"')[::2]  # escapes gone, quotes split strings
    brackets = b"".join(outside).translate(None, _NOT_BRACKET)
    for _ in range(limit):
        brackets, removed = _PAIR.subn(b"", brackets)
        if not removed:  # balanced and within the limit, or malformed
            return brackets.count(b"[") + brackets.count(b"{") > limit
    return bool(_PAIR.search(brackets))
