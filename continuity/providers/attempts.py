"""The attempt log: every HTTP send a real run made, so a retry never goes unseen.

A real run keeps ``<out>/attempts.jsonl``. Each probe process appends one line per HTTP
attempt (one ``write`` of less than ``PIPE_BUF`` bytes on an ``O_APPEND`` file, so lines
from concurrent processes never interleave): when, the endpoint and model, a digest of
the body (never the body), its size, the outcome (``http_200``, ``http_429``,
``connect_failed``, ``timeout``, ``send_failed``; ``empty_stream`` notes that the 200
before it ended without an event) and the attempt's index within its call (0 first,
then each retry). `summarize_attempts` reads it back for
the report's spend section: how many sends, how many of them were retries and why, and
how many requests timed out (never re-sent by the client; a rerun sends them again).
"""

from __future__ import annotations

import datetime as dt
import os
from collections import Counter
from pathlib import Path

import msgspec

from continuity.digest import digest_bytes

__all__ = ["ATTEMPT_LOG", "Attempt", "AttemptSummary", "log_attempt", "summarize_attempts"]

ATTEMPT_LOG = "attempts.jsonl"


class Attempt(msgspec.Struct, frozen=True, kw_only=True):
    at: str
    url: str
    model: str
    body: str  # blake3 of the request body, 16 hex digits
    bytes: int
    outcome: str
    retry: int


class AttemptSummary(msgspec.Struct, frozen=True, kw_only=True):
    """A run's sends: every attempt, the retries among them by outcome of the attempt
    that was retried, and the requests that timed out."""

    sends: int
    requests: int
    retries: int
    retried_after: dict[str, int]
    timed_out: int
    unreadable_lines: int = 0


def log_attempt(path: str, url: str, model: str, body: bytes, outcome: str, retry: int) -> None:
    """Append one attempt to the log at `path` (best effort: a log that cannot be
    written never fails the call it describes)."""
    line = msgspec.json.encode(
        Attempt(
            at=dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds"),
            url=url,
            model=model[:200],
            body=digest_bytes(body)[:16],
            bytes=len(body),
            outcome=outcome,
            retry=retry,
        )
    )
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    except OSError:
        return
    try:
        os.write(fd, line + b"\n")
    except OSError:
        pass
    finally:
        os.close(fd)


def summarize_attempts(path: Path) -> AttemptSummary | None:
    """The summary of the log at `path` (None when the run has none)."""
    try:
        lines = path.read_bytes().splitlines()
    except OSError:
        return None
    attempts: list[Attempt] = []
    unreadable = 0
    for line in lines:
        try:
            attempts.append(msgspec.json.decode(line, type=Attempt))
        except msgspec.MsgspecError:
            unreadable += 1
    # A retry is an attempt past the first of its call (its `retry` index): the client
    # retried after a 429, a 5xx or no connection, or asked again after an empty stream
    # (a different body, without streaming). Bodies sent twice on purpose (the repeats of
    # a plan, which are independent samples) are requests of their own, never retries.
    sent = [a for a in attempts if a.outcome != "empty_stream"]
    retried_after: Counter[str] = Counter()
    for index, attempt in enumerate(sent):
        if attempt.retry == 0:
            continue
        earlier = next(
            (
                e
                for e in reversed(sent[:index])
                if e.body == attempt.body and e.retry < attempt.retry
            ),
            None,
        )
        retried_after[earlier.outcome if earlier is not None else "empty_stream"] += 1
    return AttemptSummary(
        sends=len(sent),
        requests=sum(1 for a in sent if a.retry == 0),
        retries=sum(retried_after.values()),
        retried_after=dict(sorted(retried_after.items())),
        timed_out=sum(1 for a in attempts if a.outcome == "timeout"),
        unreadable_lines=unreadable,
    )
