"""What the reader saw at the probe, kept as a content-addressed artifact.

The probe child keeps the reader's last request (the one it answered from) as a store
tree of two blobs: ``context.json`` (`ContextPart`: the model, system prompt, offered
tools and every message before the probe question: the compaction summary, the pack,
the rebuilt or reseeded context, the ledger) and ``turn.json`` (`ProbeTurn`: the probe
question and whatever the reader did after it before answering: its tool calls and
their results, ConversationHistory lookups included). The probes of one unit share
their context part, so the store keeps it once. The tree's `ObjectRef` is the sample's
`SampleEvidence.context`.

It is exactly what the reader was sent, for scripted and real readers alike (the
requests `continuity.sampling.reader.ProbeReader.seen` holds), so it never holds an
evaluator-only value the reader was not given: the needles stay in the `ProbeRequest`
and the report adds its highlights when it renders. It is deterministic: a message
carries what the model sees and how it arrived, never a session id or a time, so two
samples of one key store the same tree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import msgspec

from continuity.errors import ObjectCorrupt
from continuity.messages import (
    AssistantMessage,
    Message,
    ModelRequest,
    ToolResultMessage,
    UserMessage,
)
from continuity.sampling.receipts import SampleEvidence
from continuity.store import ObjectRef, Store, TreeEntry

__all__ = [
    "CONTEXT_FILE",
    "CONTEXT_SCHEMA",
    "TURN_FILE",
    "TURN_SCHEMA",
    "ContextCall",
    "ContextMessage",
    "ContextPart",
    "ProbeTurn",
    "ReaderContext",
    "keep_context",
    "load_context",
    "put_context",
    "reader_context",
]

CONTEXT_SCHEMA = "continuity-reader-context-v1"
TURN_SCHEMA = "continuity-probe-turn-v1"
CONTEXT_FILE = "context.json"
TURN_FILE = "turn.json"


class ContextCall(msgspec.Struct, frozen=True):
    """One tool call the reader made: its id, the tool and its arguments."""

    call_id: str
    name: str
    arguments: dict[str, Any]


class ContextMessage(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One message as the reader received it. `source` says how a user message arrived
    (``owner``, ``summary``, ``pack``, ``reseed``, ``ledger``, ``probe``...); a tool
    result names its call and tool."""

    role: Literal["user", "assistant", "tool"]
    text: str = ""
    source: str = ""
    tool_calls: list[ContextCall] = msgspec.field(default_factory=list)
    call_id: str = ""
    tool: str = ""
    is_error: bool = False


class ContextPart(msgspec.Struct, frozen=True, kw_only=True):
    """What the reader had before the probe question (``context.json``)."""

    schema: str = CONTEXT_SCHEMA
    model: str
    system: str
    # The tools offered, each "name: description".
    tools: list[str]
    messages: list[ContextMessage]


class ProbeTurn(msgspec.Struct, frozen=True, kw_only=True):
    """The probe turn up to the answer (``turn.json``): the question, then the reader's
    tool calls and their results; `requests` is how many requests the turn made."""

    schema: str = TURN_SCHEMA
    messages: list[ContextMessage]
    requests: int


class ReaderContext(msgspec.Struct, frozen=True, kw_only=True):
    """Both parts, as the report reads them back; `digest` is the context part's."""

    context: ContextPart
    turn: ProbeTurn
    digest: str = ""

    def tool_calls(self) -> list[ContextCall]:
        """The tool calls the reader made at the probe, in order."""
        return [call for m in self.turn.messages for call in m.tool_calls]


def _message(message: Message) -> ContextMessage:
    if isinstance(message, UserMessage):
        return ContextMessage(role="user", text=message.text, source=message.source)
    if isinstance(message, ToolResultMessage):
        return ContextMessage(
            role="tool",
            text=message.text,
            call_id=message.call_id,
            tool=message.tool,
            is_error=message.is_error,
        )
    assert isinstance(message, AssistantMessage)
    calls = [ContextCall(c.call_id, c.name, c.arguments) for c in message.tool_calls]
    return ContextMessage(role="assistant", text=message.text, tool_calls=calls)


def reader_context(seen: Sequence[ModelRequest]) -> ReaderContext | None:
    """The reader's last request (`seen`: every request of the probe turn, in order),
    split at the probe question (the last probe-sourced user message); None when the
    reader was sent nothing."""
    if not seen:
        return None
    last = seen[-1]
    messages = [_message(m) for m in last.messages]
    probe_at = max(
        (i for i, m in enumerate(messages) if m.role == "user" and m.source == "probe"),
        default=len(messages),
    )
    return ReaderContext(
        context=ContextPart(
            model=last.model,
            system=last.system,
            tools=[f"{t.name}: {t.description}" for t in last.tools],
            messages=messages[:probe_at],
        ),
        turn=ProbeTurn(messages=messages[probe_at:], requests=len(seen)),
    )


def put_context(store: Store, context: ReaderContext) -> ObjectRef:
    """Store `context` as a tree of its two parts (idempotent) and return its ref."""
    part = store.put_blob(msgspec.json.encode(context.context))
    turn = store.put_blob(msgspec.json.encode(context.turn))
    return store.put_tree(
        {
            CONTEXT_FILE: TreeEntry("blob", part.digest, part.size),
            TURN_FILE: TreeEntry("blob", turn.digest, turn.size),
        }
    )


def keep_context(
    store_root: str | None, seen: Sequence[ModelRequest], evidence: SampleEvidence
) -> SampleEvidence:
    """`evidence` with the reader's context stored under `store_root` and referenced
    (unchanged without a store, or when the reader was sent nothing)."""
    context = reader_context(seen)
    if store_root is None or context is None:
        return evidence
    ref = put_context(Store(store_root), context)
    return msgspec.structs.replace(evidence, context=ref)


def load_context(store: Store, ref: ObjectRef) -> ReaderContext:
    """The context `ref` names, read back from `store`.

    Raises:
        ObjectMissing: the store no longer holds it (or a part of it).
        ObjectCorrupt: a part failed its digest or is not a context part.
    """
    entries = store.get_tree(ref.digest).entries
    try:
        part_entry, turn_entry = entries[CONTEXT_FILE], entries[TURN_FILE]
        part = msgspec.json.decode(store.get_blob(part_entry.digest), type=ContextPart)
        turn = msgspec.json.decode(store.get_blob(turn_entry.digest), type=ProbeTurn)
    except (KeyError, msgspec.MsgspecError) as exc:
        raise ObjectCorrupt(
            f"object {ref.digest} is not a reader context: {exc}", location=ref.digest
        ) from None
    return ReaderContext(context=part, turn=turn, digest=part_entry.digest)
