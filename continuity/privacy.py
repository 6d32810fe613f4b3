"""Privacy rules shared by validation and retention.

A tool result that contains a textual credential assignment ("Temporary password: X",
"pin=1234", "API key: ...") is omitted *whole* from retained evidence: no partial
salvage. A generated trace's redaction secret must sit in such a result.
"""

from __future__ import annotations

import re

__all__ = ["CREDENTIAL_ASSIGNMENT", "has_credential_assignment"]

CREDENTIAL_ASSIGNMENT = re.compile(
    r"(?i)\b(?:pass(?:word|code|phrase)|pin|secret|token|api[ _-]?key)\b[^\n:=]{0,24}[:=]\s*\S"
)


def has_credential_assignment(text: str) -> bool:
    return CREDENTIAL_ASSIGNMENT.search(text) is not None
