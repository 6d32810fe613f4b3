"""Lookup-mode pieces of a probe child: page tracking, the reference path, the witness.

The probe child (`continuity.sampling.child`) uses these when its request carries a
`LookupBinding`:

- `PageTracker` reassembles the ConversationHistory ``get`` pages a reader received and
  says which records came back whole, and which of those are a probe's sources (by the
  blake3 digest of the concatenated UTF-8 text);
- `reference_path` is the evaluator's path to one source, through the same metered
  proxy a reader uses: the source's packed id when the first request displays it,
  otherwise one search with the evaluator-only source line at limit 10, then every
  8 KiB get cursor of the source record. It never lists records linearly;
- `write_witness` persists the content-free witness after every call, so a child that
  fails or is killed still leaves its meter state behind for the parent;
- `bounded_cleanup` closes the probe's servers and clients inside the 60 s cleanup
  allowance (timed on the event loop and checked on an injectable clock), and fails
  a probe whose cleanup overran with ``lookup_cleanup_timeout``.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import msgspec

from continuity.digest import digest_bytes
from continuity.errors import HarnessError
from continuity.lookup.reader import HISTORY_TOOL, displayed_packed_ids
from continuity.lookup.receipts import LookupWitness, PathReceipt, SourceRef

if TYPE_CHECKING:
    from continuity.harness.toolbox import McpToolbox
    from continuity.lookup.meter import Meter

__all__ = ["PageTracker", "bounded_cleanup", "reference_path", "write_witness"]


class PageTracker:
    """Pages of ``get`` results, by record id."""

    def __init__(self) -> None:
        self._pages: dict[str, dict[int, str]] = {}
        self._total: dict[str, int] = {}

    def absorb(self, text: str) -> dict[str, object] | None:
        try:
            payload = json.loads(text)
        except ValueError:
            return None
        if not isinstance(payload, dict) or "offset" not in payload or "id" not in payload:
            return payload if isinstance(payload, dict) else None
        self._pages.setdefault(payload["id"], {})[int(payload["offset"])] = payload["text"]
        self._total[payload["id"]] = int(payload["total_bytes"])
        return payload

    def whole(self) -> dict[str, str]:
        """Record id -> blake3 of the record's text, for every record returned whole."""
        complete = {}
        for record, pages in self._pages.items():
            data = b""
            for offset in sorted(pages):
                if offset != len(data):
                    break
                data += pages[offset].encode("utf-8")
            else:
                if len(data) == self._total[record]:
                    complete[record] = digest_bytes(data)
        return complete

    def sources_returned(self, sources: list[SourceRef]) -> int:
        digests = set(self.whole().values())
        return sum(1 for s in sources if s.digest in digests)


async def reference_path(
    toolbox: McpToolbox,
    meter: Meter,
    source: SourceRef,
    first_context: str,
    record: tuple[str, str] | None,
) -> PathReceipt:
    """The evaluator's reference path to `source`, whose (record id, packed id) in the
    arm's store the evaluator resolved by digest (None: not retained). See the module
    doc."""
    before = meter.state()
    tracker = PageTracker()
    displayed = {pid for pid, _ in displayed_packed_ids(first_context)}

    async def call(arguments: dict[str, object]) -> dict[str, object] | None:
        result = await toolbox.call_raw(HISTORY_TOOL, arguments)
        text = "".join(getattr(item, "text", "") for item in result.content)
        if result.is_error:
            return None
        return tracker.absorb(text)

    target: str | None = None
    shown = record is not None and record[1] in displayed
    if record is not None and shown:
        target = record[1]
    elif record is not None:
        page = await call({"action": "search", "query": source.line, "limit": 10})
        hits = page.get("hits", []) if page else []
        assert isinstance(hits, list)
        target = next((str(h["id"]) for h in hits if h.get("id") == record[0]), None)
    discovered = target is not None
    cursor: str | None = None
    while target is not None:
        arguments: dict[str, object] = {"action": "get", "id": target}
        if cursor:
            arguments["cursor"] = cursor
        page = await call(arguments)
        if page is None:
            break
        target = str(page["id"])
        cursor = page.get("next_cursor")  # type: ignore[assignment]
        if not cursor:
            break
    after = meter.state()
    verified = tracker.sources_returned([source]) == 1
    return PathReceipt(
        discovered=discovered,
        verified=verified,
        displayed=shown,
        calls=after.calls - before.calls,
        bytes=after.bytes - before.bytes,
        responses=after.responses[len(before.responses) :],
    )


def write_witness(path: str | None, witness: LookupWitness) -> None:
    """Persist the witness atomically (content-free: ids, digests, counts)."""
    if path is None:
        return
    target = Path(path)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    temporary.write_bytes(msgspec.json.encode(witness))
    os.replace(temporary, target)


@contextlib.asynccontextmanager
async def bounded_cleanup(
    seconds: float | None,
    clock: Callable[[], float],
    on_timeout: Callable[[], object],
    *,
    location: str = "",
) -> AsyncIterator[contextlib.AsyncExitStack]:
    """An exit stack whose closing (servers, clients, the meter) must finish within
    `seconds` (``None``: unbounded, the recall-only path).

    The stack lives inside a cancel scope entered before anything is pushed onto it, so
    the scope can bound the whole cleanup: when cleanup starts it gets a deadline
    `seconds` away and a shield (an outer cancellation cannot skip the cleanup). The
    overrun is also checked on `clock`, so tests drive it with a fake clock. On an
    overrun it calls `on_timeout` (the child's last witness) and raises
    ``lookup_cleanup_timeout``, unless the body already failed: that first error is the
    probe's error and is raised as it was.

    Raises:
        HarnessError: ``lookup_cleanup_timeout``.
    """
    stack = contextlib.AsyncExitStack()
    failure: BaseException | None = None
    with anyio.CancelScope() as scope:
        try:
            yield stack
        except BaseException as exc:  # re-raised below, once everything is closed
            failure = exc
        begun = clock()
        if seconds is not None:
            scope.deadline = anyio.current_time() + seconds
            scope.shield = True
        await stack.aclose()
    if failure is not None:
        raise failure
    if seconds is not None and (scope.cancelled_caught or clock() - begun > seconds):
        on_timeout()
        raise HarnessError(
            f"the lookup probe's cleanup passed its {seconds:.0f} s allowance",
            code="lookup_cleanup_timeout",
            location=location,
        )
