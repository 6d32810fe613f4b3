"""The inventory's two regression records, measured through the real handler, keyed.

Two records of 27,600 UTF-8 bytes (one plain, one full of characters JSON must escape)
are retained in a scratch store and followed by the evaluator's reference path through
the metered proxy of a real ConversationHistory server, so the handler and its 8 KiB
response splitter are measured. Each record's path is an action keyed by the record's
name and the blake3 digest of its text, and by the code digest of `REGRESSION_CODE`;
a stored one is reused.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import anyio

from continuity.digest import KeySpec, code_digest, digest_bytes
from continuity.lookup.budget import BYTE_CAP, CALL_CAP
from continuity.lookup.receipts import PathReceipt, SourceRef
from continuity.runner.inventory_paths import PathRecord, record_path, stored_record
from continuity.store import Store

__all__ = [
    "REGRESSION_ARM",
    "REGRESSION_BYTES",
    "REGRESSION_CODE",
    "REGRESSION_KIND",
    "REGRESSION_SALT",
    "REGRESSION_TRACE",
    "measure_regression",
    "regression_spec",
    "regression_texts",
]

REGRESSION_BYTES = 27_600
REGRESSION_KIND = "lookup-regression-path"
REGRESSION_SALT = "lookup-regression-path-v1"
REGRESSION_TRACE = "regression"
REGRESSION_ARM = "handler"
# The handler's code: the retained store and the ConversationHistory server (with their
# packages: memory, servers), the MCP client the path calls through, the meter and its
# caps, the reference path and the receipts, and this module (the records' texts).
REGRESSION_CODE = (
    "continuity.memory",
    "continuity.servers",
    "continuity.harness.toolbox",
    "continuity.lookup.budget",
    "continuity.lookup.meter",
    "continuity.lookup.probe",
    "continuity.lookup.reader",
    "continuity.lookup.receipts",
    "continuity.lookup.state",
    "continuity.runner.inventory_regression",
)


def regression_texts() -> dict[str, str]:
    """The two records' texts by name, each exactly `REGRESSION_BYTES` UTF-8 bytes."""
    plain_line = "Regression record: the loading bay schedule for pallets and crates. "
    escaped_line = 'Quote "marks", back\\slashes, tabs\t, newlines\n and non-ASCII: £ é — 漢字. '
    texts = {}
    for name, line in (("plain", plain_line), ("escaped", escaped_line)):
        text = ""
        while len((text + line).encode("utf-8")) <= REGRESSION_BYTES:
            text += line
        pad = REGRESSION_BYTES - len(text.encode("utf-8"))
        texts[name] = text + "x" * pad
    return texts


def regression_spec(name: str, text: str) -> KeySpec:
    return KeySpec(
        kind=REGRESSION_KIND,
        salt=REGRESSION_SALT,
        code=code_digest(REGRESSION_CODE),
        params={"name": name, "text": digest_bytes(text.encode("utf-8"))},
    )


def _source(text: str) -> SourceRef:
    data = text.encode("utf-8")
    head = text.splitlines()[0]
    return SourceRef(value=head[:40], line=head[:200], digest=digest_bytes(data), size=len(data))


async def _measure(root: Path, texts: dict[str, str], wanted: list[str]) -> dict[str, PathReceipt]:
    """The reference paths of the `wanted` records, with every record retained (a
    search's response lists the other record too, so both are always there)."""
    from continuity.harness.toolbox import McpToolbox
    from continuity.lookup.meter import metered_history
    from continuity.lookup.probe import reference_path
    from continuity.memory.retained import RetainedStore
    from continuity.servers.history import serve_history

    store = RetainedStore(root / "regression.sqlite3")
    for name, text in texts.items():
        store.retain_tool_result(text, tool="document", tool_kind="document", entry_ref=name)
    receipts = {}
    try:
        async with serve_history(store) as upstream:
            for name in wanted:
                source = _source(texts[name])
                async with (
                    metered_history(upstream, calls=CALL_CAP, budget_bytes=BYTE_CAP) as (
                        url,
                        meter,
                    ),
                    McpToolbox(url) as toolbox,
                ):
                    receipts[name] = await reference_path(
                        toolbox, meter, source, "", store.find_by_digest(source.digest)
                    )
    finally:
        store.close()
    return receipts


def measure_regression(store: Store) -> list[tuple[str, PathRecord, bool]]:
    """Both records' paths as (key, record, measured), the stored ones reused; the others
    measured together in one scratch store (removed afterwards) and stored."""
    texts = regression_texts()
    specs = {name: regression_spec(name, text) for name, text in texts.items()}
    found = {name: stored_record(store, spec.key(), PathRecord) for name, spec in specs.items()}
    missing = [name for name, record in found.items() if record is None]
    if missing:
        with tempfile.TemporaryDirectory() as tmp:
            receipts = anyio.run(_measure, Path(tmp), texts, missing)
        for name, receipt in receipts.items():
            record = PathRecord(
                trace_id=REGRESSION_TRACE,
                arm=REGRESSION_ARM,
                probe_id=name,
                receipt=receipt,
                first_request_bytes=0,
            )
            record_path(store, specs[name].key(), specs[name], record)
            found[name] = record
    result = []
    for name, spec in specs.items():
        stored = found[name]
        assert stored is not None
        result.append((spec.key(), stored, name in missing))
    return result
