"""The scripted lookup reader: ConversationHistory mechanics, not semantic evaluation.

For each probe it

1. gets a packed id when the context displays one (``c31`` items of the continuity
   pack), choosing the displayed item that shares the most words with the question;
2. otherwise searches with the question's last words (limit 5) and follows the search
   ``next_cursor`` for one more page;
3. gets every hit, following each record's ``next_cursor`` to its end (complete get-cursor
   traversal, possibly many rounds);
4. stops voluntarily before a call that would exceed the planned call budget, or when
   the proxy reports the lookup exhausted, and declines (``decline``: ``UNKNOWN``, or
   ``ANSWER: UNKNOWN`` where the probe turn asks for an answer line).

It has two scripted bindings, chosen per plan with ``--lookup-reader``: the default
reads as Sol (``openai-codex:gpt-6.1-sol``) with Luna as the other model (the
cold-pack arm's history), and the alternate swaps them. The native arm's history is
replayed on the binding's reader model, so it stays the reader's native session. Both
run the same scripted mechanics; neither is ever a model call. Its dispatch capacity
(one call per round, any number of rounds) exceeds the probe turn's ceiling (call budget
+ 2 rounds), so budget exhaustion is an explicit, expected mechanics outcome.
"""

from __future__ import annotations

import json
import re
from collections import deque

from continuity.errors import UsageError
from continuity.lookup.state import ReaderStop
from continuity.messages import (
    ModelRequest,
    ToolCallRequest,
    ToolResultMessage,
    UserMessage,
)
from continuity.providers.scripted import ScriptedStep

__all__ = [
    "HISTORY_TOOL",
    "LOOKUP_BINDINGS",
    "LUNA",
    "SOL",
    "UNKNOWN_ANSWER",
    "LookupReader",
    "binding_models",
    "displayed_packed_ids",
]

HISTORY_TOOL = "ConversationHistory"
UNKNOWN_ANSWER = "UNKNOWN"
SOL = "openai-codex:gpt-6.1-sol"
LUNA = "openai-codex:gpt-6-luna"
# The two scripted reader bindings: (the reader's model, the other model).
LOOKUP_BINDINGS = {"default": (SOL, LUNA), "alternate": (LUNA, SOL)}


def binding_models(name: str) -> tuple[str, str]:
    """(reader, alternate) provider:model of a scripted reader binding.

    Raises:
        UsageError: ``lookup_reader_unknown`` for a name that is not a binding.
    """
    if name not in LOOKUP_BINDINGS:
        raise UsageError(
            f"unknown lookup reader binding {name!r}; use one of {', '.join(LOOKUP_BINDINGS)}",
            code="lookup_reader_unknown",
            location="--lookup-reader",
        )
    return LOOKUP_BINDINGS[name]


_PACKED = re.compile(r"\b(c\d+)\b")
_WORD = re.compile(r"[A-Za-z0-9]+")


def displayed_packed_ids(text: str) -> list[tuple[str, str]]:
    """(packed id, its line) for every packed id shown in `text`, in order."""
    return [(m.group(1), line) for line in text.splitlines() for m in _PACKED.finditer(line)]


class LookupReader:
    """A stateful scripted step function for one probe turn."""

    def __init__(
        self,
        question: str,
        *,
        call_budget: int,
        search_pages: int = 2,
        decline: str = UNKNOWN_ANSWER,
    ) -> None:
        self.question = question
        self.decline = decline  # the reply it ends with: it never reads what it fetched
        self.call_budget = call_budget
        self.search_pages = search_pages
        self.calls = 0
        self.stopped: ReaderStop | None = None  # why the reader stopped looking
        self._queue: deque[tuple[str, str | None]] = deque()  # (record id, cursor)
        self._seen: set[str] = set()
        self._pages = 0
        self._started = False

    def _call(self, arguments: dict[str, object]) -> ScriptedStep:
        self.calls += 1
        call = ToolCallRequest(f"lookup-{self.calls}", HISTORY_TOOL, arguments)
        return ScriptedStep(text="", tool_calls=(call,))

    def _first(self, request: ModelRequest) -> ScriptedStep:
        context = "\n".join(m.text for m in request.messages if isinstance(m, UserMessage))
        shown = displayed_packed_ids(context)
        words = {w.lower() for w in _WORD.findall(self.question)}
        if shown:
            best = max(
                shown,
                key=lambda item: (
                    len(words & {w.lower() for w in _WORD.findall(item[1])}),
                    -shown.index(item),
                ),
            )
            self._seen.add(best[0])
            return self._call({"action": "get", "id": best[0]})
        query = " ".join(self.question.replace(":", " ").split()[-8:])
        self._pages = 1
        return self._call({"action": "search", "query": query, "limit": 5})

    def _absorb(self, result: ToolResultMessage) -> None:
        """Queue what a result points to: hits to get, cursors to follow."""
        if result.is_error:
            if "lookup_budget_exhausted" in result.text:
                self.stopped = "exhausted"
            return
        try:
            payload = json.loads(result.text)
        except ValueError:
            return
        if "hits" in payload:
            for hit in payload["hits"]:
                if hit["id"] not in self._seen:
                    self._seen.add(hit["id"])
                    self._queue.append((hit["id"], None))
            cursor = payload.get("next_cursor")
            if cursor and self._pages < self.search_pages:
                self._pages += 1
                self._queue.appendleft(("search:" + cursor, None))
        elif payload.get("next_cursor"):
            self._queue.appendleft((payload["id"], payload["next_cursor"]))

    def __call__(self, request: ModelRequest) -> ScriptedStep:
        if not self._started:
            self._started = True
            return self._first(request)
        last = request.messages[-1]
        if isinstance(last, ToolResultMessage):
            self._absorb(last)
        if self.stopped is None and not self._queue:
            self.stopped = "done"
        if self.stopped is None and self.calls >= self.call_budget:
            self.stopped = "budget"  # voluntary: never dispatch an excess call
        if self.stopped is not None:
            return ScriptedStep(text=self.decline)
        target, cursor = self._queue.popleft()
        if target.startswith("search:"):
            query = " ".join(self.question.replace(":", " ").split()[-8:])
            return self._call(
                {"action": "search", "query": query, "limit": 5, "cursor": target[len("search:") :]}
            )
        arguments: dict[str, object] = {"action": "get", "id": target}
        if cursor:
            arguments["cursor"] = cursor
        return self._call(arguments)
