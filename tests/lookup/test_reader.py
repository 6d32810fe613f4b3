"""The scripted lookup reader's mechanics, driven by hand-made tool results."""

from __future__ import annotations

import json
from typing import Any

from continuity.lookup.reader import LOOKUP_BINDINGS, LookupReader, displayed_packed_ids
from continuity.messages import (
    AssistantMessage,
    Message,
    ModelRequest,
    ToolResultMessage,
    UserMessage,
)

QUESTION = "Which return authorisation number did the vendor finally confirm?"


def request(*messages: Message) -> ModelRequest:
    return ModelRequest(session_id="s", provider="p", model="m", system="", messages=messages)


def drive(
    reader: LookupReader, context: list[Message], respond: Any, rounds: int = 40
) -> list[dict[str, Any]]:
    """Run the reader against `respond(arguments) -> (text, is_error)`; return calls."""
    messages = [*context, UserMessage(QUESTION, source="probe")]
    calls: list[dict[str, Any]] = []
    for _ in range(rounds):
        step = reader(request(*messages))
        if not step.tool_calls:
            assert step.text == "UNKNOWN"
            return calls
        (call,) = step.tool_calls
        calls.append(call.arguments)
        text, error = respond(call.arguments)
        messages += [
            AssistantMessage(tool_calls=(call,)),
            ToolResultMessage(call.call_id, call.name, text, is_error=error),
        ]
    raise AssertionError("the reader never answered")


def page(record: str, offset: int, total: int, size: int) -> str:
    end = min(offset + size, total)
    return json.dumps(
        {
            "id": record,
            "packed_id": "c1",
            "kind": "tool",
            "source": "mail",
            "total_bytes": total,
            "offset": offset,
            "text": "x" * (end - offset),
            "next_cursor": f"g{end}" if end < total else None,
        }
    )


def library(arguments: dict[str, Any]) -> tuple[str, bool]:
    """Two search pages of two hits each; every record is three pages long."""
    if arguments["action"] == "search":
        second = arguments.get("cursor") == "s2"
        ids = ["tool-3", "tool-4"] if second else ["tool-1", "tool-2"]
        hits = [
            {
                "id": i,
                "packed_id": "c" + i[-1],
                "kind": "tool",
                "source": "mail",
                "bytes": 24_000,
                "snippet": "...",
            }
            for i in ids
        ]
        return json.dumps({"hits": hits, "next_cursor": None if second else "s2"}), False
    offset = int(arguments.get("cursor", "g0")[1:])
    return page(arguments["id"], offset, 24_000, 8_192), False


def test_search_pagination_and_complete_cursor_traversal() -> None:
    reader = LookupReader(QUESTION, call_budget=40)
    calls = drive(reader, [], library)
    assert calls[0]["action"] == "search" and "confirm?" in calls[0]["query"]
    assert calls[1] == {"action": "search", "query": calls[0]["query"], "limit": 5, "cursor": "s2"}
    gets = [c for c in calls if c["action"] == "get"]
    # Four records, each fetched page by page to the end: 4 x 3 pages.
    assert len(gets) == 12
    assert [c.get("cursor") for c in gets[:3]] == [None, "g8192", "g16384"]
    assert reader.stopped == "done" and len(calls) == 14  # more than eight tool rounds


def test_it_stops_voluntarily_before_an_excess_call() -> None:
    reader = LookupReader(QUESTION, call_budget=8)
    calls = drive(reader, [], library)
    assert len(calls) == 8 and reader.stopped == "budget"


def test_a_displayed_packed_id_is_fetched_directly() -> None:
    pack = UserMessage(
        "<continuity-pack v1>\n- c7 [tool mail] the vendor confirmed authorisation RMA-1\n"
        "- c9 [owner] lunch on Friday",
        source="pack",
    )
    reader = LookupReader(QUESTION, call_budget=8)
    calls = drive(reader, [pack], library)
    assert calls[0] == {"action": "get", "id": "c7"}  # the best-matching displayed item
    assert all(c["action"] == "get" for c in calls)
    assert displayed_packed_ids(pack.text)[0][0] == "c7"


def test_the_proxy_exhaustion_stops_the_reader() -> None:
    def exhausted(arguments: dict[str, Any]) -> tuple[str, bool]:
        if arguments["action"] == "search":
            return library(arguments)
        return "tool_call_failed: lookup_budget_exhausted: bytes (response withheld whole)", True

    reader = LookupReader(QUESTION, call_budget=8)
    calls = drive(reader, [], exhausted)
    assert reader.stopped == "exhausted" and len(calls) == 3  # two searches, one get


def test_two_scripted_bindings() -> None:
    assert set(LOOKUP_BINDINGS) == {"default", "alternate"}
    assert len(set(LOOKUP_BINDINGS.values())) == 2
