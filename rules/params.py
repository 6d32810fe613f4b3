"""Task parameters shared by several task families."""

from __future__ import annotations

from typing import Any

STORE: dict[str, Any] = {
    "name": "store",
    "long": "store",
    "type": str,
    "default": "",
    "help": "artifact store directory (default: $CONTINUITY_STORE or ./store)",
}
OUT: dict[str, Any] = {
    "name": "out",
    "long": "out",
    "type": str,
    "default": "",
    "help": "output directory (default: $CONTINUITY_OUT or ./out)",
}
