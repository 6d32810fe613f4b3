"""The call cache and recordings, and the per-invocation admission ledger.

**Call cache.** Every real model call is recorded in the store under a key of the
provider, model, base URL, the messages without ids, the tools, the generation config
and the repeat index (so repeats stay independent samples). A probe's compaction
("summary") calls also bind the probe (its arm and index): every probe of a unit
compacts the same final context, and each gets a summary of its own (the
confound control: the final compaction happens once per probe), never one shared
through the cache, not even with the same probe of another arm. A
checkpoint's real mid-trace summary has no probe: one per repeat, shared by the
repeat's probes. A recorded call is replayed instead of calling the endpoint again;
that is how a killed run resumes without paying twice. Errors are never recorded. With
an explain log, every lookup appends what went into its key.

**Ledger.** One SQLite file per invocation holds the stop rules every probe process
shares: no new live turn is admitted after an auth or quota failure, after the planned
live-turn count, or once the observed input tokens cross the cap. These are observed,
not reserved, limits: a turn already admitted may finish and exceed them.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Literal, Protocol

import msgspec

from continuity.digest import KeySpec, code_digest, value_digest
from continuity.errors import AdmissionStopped, ProviderError
from continuity.messages import (
    AssistantMessage,
    ModelRequest,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from continuity.providers.endpoint import CallReceipt, EndpointSpec
from continuity.providers.endpoint_facts import record_cap_ignored
from continuity.providers.protocol import Completed, ProviderEvent, TextDelta, ToolCallEvent
from continuity.sqlite_open import CALL_LEDGER, open_db
from continuity.store import Store, utc_now

__all__ = [
    "CALL_KIND",
    "CALL_SALT",
    "CachedProvider",
    "CallReceipt",
    "CallRecord",
    "Ledger",
    "call_key",
    "explain",
    "explain_lines",
    "key_parts",
]

CALL_SALT = "call-v1"
CALL_KIND = "model-call"


class _Streaming(Protocol):
    name: str
    model: str

    def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]: ...


class CallRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One recorded model call: what came back, and which model the server said it was."""

    schema: str = "continuity-call-v1"
    key: str
    kind: str
    base_url: str
    requested_model: str
    completed: Completed
    attempts: list[int]
    recorded_at: str


def _message(message: Any) -> list[Any]:
    if isinstance(message, UserMessage):
        return ["user", message.text]
    if isinstance(message, ToolResultMessage):
        return ["tool", message.tool, message.text, message.is_error]
    assert isinstance(message, AssistantMessage)
    return ["assistant", message.text, [[c.name, c.arguments] for c in message.tool_calls]]


def key_parts(
    spec: EndpointSpec, request: ModelRequest, repeat: int, probe: str | None = None
) -> dict[str, Any]:
    """Everything a call key covers (messages without ids or attribution metadata);
    `probe` (a probe's compaction calls) only when given, so other keys are unchanged."""
    parts = {
        "provider": spec.kind,
        "model": spec.model,
        "base_url": spec.base_url.rstrip("/"),
        "system": request.system,
        "messages": [_message(m) for m in request.messages],
        "tools": [[t.name, t.description, t.input_schema] for t in request.tools],
        "generation": spec.generation(),
        "repeat": repeat,
    }
    if probe is not None:
        parts["probe"] = probe
    return parts


def call_key(
    spec: EndpointSpec, request: ModelRequest, repeat: int, probe: str | None = None
) -> str:
    return KeySpec(
        kind="model-call",
        salt=CALL_SALT,
        code=code_digest(["continuity.providers.cache"]),
        params=key_parts(spec, request, repeat, probe),
        inputs={},
    ).key()


def explain(
    spec: EndpointSpec, request: ModelRequest, repeat: int, probe: str | None = None
) -> dict[str, Any]:
    """A readable account of a key's inputs (large parts as digests and counts)."""
    parts = key_parts(spec, request, repeat, probe)
    return {
        "provider": parts["provider"],
        "model": parts["model"],
        "base_url": parts["base_url"],
        "system": value_digest(parts["system"])[:16],
        "messages": {
            "count": len(parts["messages"]),
            "digest": value_digest(parts["messages"])[:16],
            "roles": "".join(m[0][0] for m in parts["messages"]),
        },
        "tools": [t[0] for t in parts["tools"]],
        "generation": parts["generation"],
        "repeat": repeat,
        "probe": probe,
    }


class Ledger:
    """The invocation's shared admission state (SQLite, one row)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._db = open_db(self.path, CALL_LEDGER)

    @classmethod
    def create(
        cls, path: Path, *, planned_live_turns: int, max_observed_input_tokens: int | None
    ) -> Ledger:
        path.parent.mkdir(parents=True, exist_ok=True)
        ledger = cls(path)
        ledger._db.executescript(
            """
            PRAGMA journal_mode=WAL;
            CREATE TABLE IF NOT EXISTS ledger (
                id INTEGER PRIMARY KEY CHECK (id = 1),
                planned INTEGER NOT NULL, max_input INTEGER, admitted INTEGER NOT NULL,
                observed_input INTEGER NOT NULL, calls INTEGER NOT NULL, stopped TEXT);
            """
        )
        ledger._db.execute(
            "INSERT OR REPLACE INTO ledger VALUES (1, ?, ?, 0, 0, 0, NULL)",
            (planned_live_turns, max_observed_input_tokens),
        )
        return ledger

    def close(self) -> None:
        self._db.close()

    def state(self) -> dict[str, Any]:
        row = self._db.execute(
            "SELECT planned, max_input, admitted, observed_input, calls, stopped FROM ledger"
        ).fetchone()
        keys = ("planned", "max_input", "admitted", "observed_input", "calls", "stopped")
        return dict(zip(keys, row, strict=True))

    def admit(self) -> None:
        """Admit one live turn, or raise `AdmissionStopped` (code ``admission_stopped``)."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            planned, admitted, stopped = self._db.execute(
                "SELECT planned, admitted, stopped FROM ledger"
            ).fetchone()
            if stopped is None and admitted >= planned:
                stopped = f"the planned {planned} live turns were admitted"
                self._db.execute("UPDATE ledger SET stopped = ?", (stopped,))
            if stopped is not None:
                self._db.execute("COMMIT")
                raise AdmissionStopped(f"no new live turn: {stopped}", location=str(self.path))
            self._db.execute("UPDATE ledger SET admitted = admitted + 1")
            self._db.execute("COMMIT")
        except sqlite3.Error:
            self._db.execute("ROLLBACK")
            raise

    def observe(self, usage: Usage) -> None:
        """Count a real call's input; stop admission once the cap is crossed."""
        self._db.execute("BEGIN IMMEDIATE")
        self._db.execute(
            "UPDATE ledger SET observed_input = observed_input + ?, calls = calls + 1",
            (usage.total_input,),
        )
        self._db.execute(
            "UPDATE ledger SET stopped = 'observed input ' || observed_input || "
            "' tokens crossed limits.max_observed_input_tokens_per_invocation ' || max_input "
            "WHERE stopped IS NULL AND max_input IS NOT NULL AND observed_input > max_input"
        )
        self._db.execute("COMMIT")

    def check_open(self) -> None:
        """Raise `AdmissionStopped` when a stop rule has fired (admits nothing)."""
        stopped = self._db.execute("SELECT stopped FROM ledger").fetchone()[0]
        if stopped is not None:
            raise AdmissionStopped(f"no new call: {stopped}", location=str(self.path))

    def stop(self, reason: str) -> None:
        self._db.execute("UPDATE ledger SET stopped = ? WHERE stopped IS NULL", (reason,))


class CachedProvider:
    """Wrap a real provider with the call cache, the ledger and call receipts.

    `receipts` has one `CallReceipt` per call, replayed or not (the same bytes either
    way); `replayed` has the keys of the calls replayed from the cache, which the caller
    keeps beside its artifact, never in it. `probe` enters the call key (a probe's own
    compaction calls). With `gate`, a call not in the cache is made only while the ledger
    admits work (calls outside a live turn, such as a checkpoint's real mid-trace
    summary)."""

    def __init__(
        self,
        inner: _Streaming,
        spec: EndpointSpec,
        store: Store,
        *,
        repeat: int,
        role: Literal["answer", "summary", "judge", "upkeep"],
        ledger: Ledger | None = None,
        explain_log: str | None = None,
        probe: str | None = None,
        gate: bool = False,
    ) -> None:
        self.inner = inner
        self.spec = spec
        self.store = store
        self.repeat = repeat
        self.role = role
        self.ledger = ledger
        self.explain_log = explain_log
        self.probe = probe
        self.gate = gate
        self.name = inner.name
        self.model = inner.model
        self.requests: list[ModelRequest] = []
        self.replayed: list[str] = []
        # Receipts by the position of their request, so concurrent calls (a compaction's
        # history and split-turn summaries) list in request order, not finishing order:
        # a live build and a replaying build list them alike.
        self._receipts: dict[int, CallReceipt] = {}

    @property
    def receipts(self) -> list[CallReceipt]:
        """One receipt per finished call, in the order the calls were requested."""
        return [self._receipts[slot] for slot in sorted(self._receipts)]

    def _explain(self, key: str, request: ModelRequest, hit: bool) -> None:
        if self.explain_log is None:
            return
        line = {
            "key": key,
            "hit": hit,
            "role": self.role,
            "at": utc_now(),
            **explain(self.spec, request, self.repeat, self.probe),
        }
        with open(self.explain_log, "ab") as handle:
            handle.write(msgspec.json.encode(line) + b"\n")

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        slot = len(self.requests)
        self.requests.append(request)
        key = call_key(self.spec, request, self.repeat, self.probe)
        recorded = self.store.load_output(key)
        self._explain(key, request, recorded is not None)
        if recorded is not None:
            record = msgspec.json.decode(recorded, type=CallRecord)
            done = record.completed
            self._receipts[slot] = CallReceipt(
                key, self.role, done.model, done.usage, done.usage_reported
            )
            self.replayed.append(key)
            if done.message.text:
                yield TextDelta(done.message.text)
            for call in done.message.tool_calls:
                yield ToolCallEvent(call)
            yield done
            return
        if self.gate and self.ledger is not None:
            self.ledger.check_open()
        attempts = getattr(self.inner, "attempts", None)
        first_attempt = len(attempts) if attempts is not None else 0
        done_event: Completed | None = None
        try:
            async for event in self.inner.stream(request):
                if isinstance(event, Completed):
                    done_event = event
                else:
                    yield event
        except ProviderError as error:
            if self.ledger is not None and error.stops_admission:
                self.ledger.stop(f"{error.code}: {error.message}")
            if error.code == "provider_output_cap_ignored":  # a fact about the endpoint
                record_cap_ignored(self.store, self.spec.base_url, self.spec.model, error.message)
            raise
        if done_event is None:
            raise ProviderError(
                "the stream ended without a completed message",
                code="provider_stream_invalid",
                location=self.spec.base_url,
            )
        if self.ledger is not None:
            self.ledger.observe(done_event.usage)
        record = CallRecord(
            key=key,
            kind=self.spec.kind,
            base_url=self.spec.base_url,
            requested_model=self.spec.model,
            completed=done_event,
            attempts=list(attempts[first_attempt:]) if attempts is not None else [],
            recorded_at=utc_now(),
        )
        blob = self.store.put_blob(msgspec.json.encode(record))
        self.store.record_action(
            key,
            kind=CALL_KIND,
            output=blob,
            meta={"role": self.role, "model": done_event.model, "at": time.time()},
        )
        self._receipts[slot] = CallReceipt(
            key, self.role, done_event.model, done_event.usage, done_event.usage_reported
        )
        yield done_event


def explain_lines(path: str) -> list[str]:
    """The call-key explain log at `path` (``--explain-cache``) as the lines the run
    prints: hit or miss and what went into each key, then where the log is."""
    import json
    import os

    if not os.path.exists(path):
        return ["cache: no call was looked up (every selected unit was already complete)"]
    lines = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            entry = json.loads(line)
            messages = entry["messages"]
            lines.append(
                f"cache {'hit ' if entry['hit'] else 'miss'} {entry['key'][:16]} "
                f"{entry['role']:<7} {entry['provider']} {entry['model']} {entry['base_url']} "
                f"repeat={entry['repeat']} probe={entry.get('probe')} "
                f"generation={entry['generation']} "
                f"system={entry['system']} messages={messages['count']}:{messages['roles']}:"
                f"{messages['digest']} tools={entry['tools']}"
            )
    return [*lines, f"cache explanations in {path}"]
