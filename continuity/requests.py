"""Typed requests: a doit task's options, converted once at the edge.

A task's action receives doit's options as keyword arguments (each already parsed by its
parameter's type in `rules/`). The task converts them once, with `Request.of`, into its
request type, and passes that value inward; nothing below the edge reads an option by
name. Every field has the default its parameter has, so a request built from some of the
options (a test's, or another command's) holds the defaults for the rest.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

import msgspec

__all__ = ["Request", "SuiteRequest"]


class Request(msgspec.Struct, frozen=True, kw_only=True):
    """The options every task that reads the store or writes outputs shares: the store
    root and the output directory ("" is the default: ``$CONTINUITY_STORE`` or ``store``,
    and ``$CONTINUITY_OUT`` or ``out``, `continuity.store.resolve_store_path` and
    `continuity.outputs.resolve_out_path`)."""

    store: str = ""
    out: str = ""

    @classmethod
    def of(cls, options: Mapping[str, Any]) -> Self:
        """This request from a task's options. Options that are not fields of the
        request are ignored (a shared option table may hold more); a missing one takes
        its default.

        Raises:
            msgspec.ValidationError: a value of the wrong type (a defect of the caller:
                doit's parameter types give every option its field's type).
        """
        return msgspec.convert(dict(options), cls, strict=False)


class SuiteRequest(Request, frozen=True, kw_only=True):
    """A request that selects a suite and, for a generated one, its seeds ("" is the
    suite's default seeds)."""

    suite: str = "original"
    seeds: str = ""
