"""Answers a real model wrote, for a held-out calibration suite.

``python3 -m continuity.probes.real_answers --base-url URL --output FILE`` asks a real
model, behind any OpenAI-compatible server (llama.cpp's with SmolLM2 by default:
``python3 -m continuity.servers.local_model``), every probe of the shipped traces (the
four originals and hard seeds 101-104, or the hard seeds of ``--hard-seeds`` with or
without the originals, ``--no-originals``; they hold no free-recall probe, which would be
skipped), one chat request each, and writes one JSON line
per answer: the probe's id, category, question, expectation and the model's raw reply,
with what produced it (model, temperature, seed, the context's sha256). Nothing here
grades: the answers are labelled by hand afterwards, by someone who has not seen the
scorer (docs/validity.md says who and how), and only then measured.

The request is the probe turn of the current probe protocol
(`continuity.probes.protocol.probe_turn_text`, with its answer-format instruction) after
a short excerpt of the conversation: every turn an expected value cites as evidence,
in trace order, each cut to `TURN_CHARS` around the first expected value it holds (an
abstention probe, which cites none, gets the trace's first three turns). A small model
on two cores reads a few hundred tokens in seconds, not a whole trace; the excerpt keeps
what the answer needs, and distractors only where they sit beside it. Sampling is
seeded per probe, so a re-run against the same server and model writes the same file.

Errors are one coded line and exit status 2: ``output_exists`` (the output file is
there already), ``real_answer_failed`` (the server refused or did not answer; the
answers before it are kept in the file); a missing or unknown option is argparse's usage
line, also status 2.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import msgspec

from continuity.errors import ContinuityError, UsageError
from continuity.probes.protocol import PROBE_PROTOCOL, probe_turn_text
from continuity.traces import generator
from continuity.traces.keys import fixtures_dir
from continuity.traces.schema import (
    AssistantMessage,
    Fact,
    OwnerMessage,
    Probe,
    Steer,
    ToolResult,
    Trace,
    Turn,
)
from continuity.traces.validate import load_trace

__all__ = [
    "DEFAULT_SEEDS",
    "SYSTEM",
    "TURN_CHARS",
    "RealAnswer",
    "cited_facts",
    "collect",
    "excerpt",
    "main",
    "shipped_traces",
]

TURN_CHARS = 900  # each cited turn, cut around the value it holds
SYSTEM = "You are a helpful personal assistant. Answer from the conversation you are given."


class RealAnswer(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    category: str
    question: str
    expectation: msgspec.Raw
    answer: str
    model: str
    protocol: str
    temperature: float
    seed: int
    context_sha256: str


DEFAULT_SEEDS = (101, 102, 103, 104)


def shipped_traces(
    seeds: tuple[int, ...] = DEFAULT_SEEDS, *, originals: bool = True
) -> list[Trace]:
    """The four original traces (unless `originals` is false) and the hard traces of
    `seeds` (101-104 by default), in that order."""
    paths = sorted((fixtures_dir() / "original").glob("*.json")) if originals else []
    traces = [load_trace(p.read_bytes(), source=p.name) for p in paths]
    return traces + [generator.generate_trace(seed) for seed in seeds]


def cited_facts(value: object) -> Iterator[Fact]:
    if isinstance(value, Fact):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from cited_facts(item)
    elif isinstance(value, msgspec.Struct):
        for field in value.__struct_fields__:
            yield from cited_facts(getattr(value, field))


def _cut(text: str, values: list[str]) -> str:
    """`text`, or `TURN_CHARS` of it centred on the first of `values` it holds."""
    if len(text) <= TURN_CHARS:
        return text
    at = min((i for v in values if (i := text.find(v)) >= 0), default=0)
    start = max(0, min(at - TURN_CHARS // 2, len(text) - TURN_CHARS))
    return ("..." if start else "") + text[start : start + TURN_CHARS] + "..."


def _render(turn: Turn, date: str) -> str:
    if isinstance(turn, OwnerMessage):
        return f"[{date}] Me: {turn.text}"
    if isinstance(turn, Steer):
        return f"[{date}] Me (while you were working): {turn.text}"
    if isinstance(turn, AssistantMessage):
        calls = ", ".join(c.tool for c in turn.tool_calls)
        return f"[{date}] You: {turn.text}" + (f" (called {calls})" if calls else "")
    assert isinstance(turn, ToolResult)
    return f"[{date}] Tool result ({turn.tool_kind}, {turn.tool}):\n{turn.output}"


def excerpt(trace: Trace, probe: Probe) -> str:
    """The conversation excerpt the probe is asked after (see the module doc)."""
    turns = [(session.date, turn) for session in trace.sessions for turn in session.turns]
    facts = list(cited_facts(probe.expectation))
    cited = {turn_id for fact in facts for turn_id in fact.evidence}
    values = [fact.value for fact in facts]
    keep = [i for i, (_, turn) in enumerate(turns) if turn.turn_id in cited] or [0, 1, 2]
    return "\n\n".join(_cut(_render(turns[i][1], turns[i][0]), values) for i in keep)


def _ask(client: httpx.Client, model: str, context: str, turn: str, seed: int) -> str:
    body = {
        "model": model,
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Here is our conversation so far:\n\n{context}"},
            {"role": "assistant", "content": "Understood. What would you like to know?"},
            {"role": "user", "content": turn},
        ],
        "temperature": 0.7,
        "seed": seed,
        "max_tokens": 160,
    }
    response = client.post("/chat/completions", json=body)
    response.raise_for_status()
    return str(response.json()["choices"][0]["message"]["content"] or "")


def collect(base_url: str, model: str, output: Path, traces: list[Trace] | None = None) -> int:
    """Ask every probe of `traces` (the shipped ones by default) and append each answer
    to `output`; the count written."""
    written = 0
    with httpx.Client(base_url=base_url, timeout=300) as client, output.open("xb") as sink:
        for trace in shipped_traces() if traces is None else traces:
            for probe in trace.probes:
                if probe.category == "free_recall":
                    continue
                context = excerpt(trace, probe)
                turn = probe_turn_text(probe.text, probe.category)
                slot = f"{trace.trace_id}/{probe.probe_id}".encode()
                seed = int(hashlib.sha256(slot).hexdigest()[:8], 16)
                try:
                    reply = _ask(client, model, context, turn, seed)
                except (httpx.HTTPError, KeyError, IndexError, ValueError) as exc:
                    raise ContinuityError(
                        f"the server gave no answer: {exc}",
                        code="real_answer_failed",
                        location=f"{trace.trace_id}/{probe.probe_id}",
                    ) from None
                record = RealAnswer(
                    id=f"{trace.trace_id}-{probe.probe_id}",
                    category=probe.category,
                    question=probe.text,
                    expectation=msgspec.Raw(msgspec.json.encode(probe.expectation)),
                    answer=reply,
                    model=model,
                    protocol=PROBE_PROTOCOL,
                    temperature=0.7,
                    seed=seed,
                    context_sha256=hashlib.sha256(context.encode()).hexdigest(),
                )
                sink.write(msgspec.json.encode(record) + b"\n")
                sink.flush()
                written += 1
                print(f"[{written}] {record.id} {probe.category}", file=sys.stderr, flush=True)
    return written


def _seeds(text: str) -> tuple[int, ...]:
    try:
        seeds = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of seeds: {text!r}") from None
    if not seeds or min(seeds) < 1:
        raise argparse.ArgumentTypeError(f"seeds are positive integers: {text!r}")
    return seeds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m continuity.probes.real_answers",
        description="Ask a real model every shipped probe; write its raw answers (JSONL).",
    )
    parser.add_argument("--base-url", required=True, help="the server's /v1 URL")
    parser.add_argument("--model", default="smollm2-135m-instruct", help="the model name")
    parser.add_argument("--output", required=True, type=Path, help="a new JSONL file")
    parser.add_argument(
        "--hard-seeds",
        type=_seeds,
        default=DEFAULT_SEEDS,
        help="comma-separated seeds of the hard traces to ask (default 101,102,103,104); "
        "a fresh held-out set takes seeds no earlier set used",
    )
    parser.add_argument("--no-originals", action="store_true", help="skip the four original traces")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0) and 2
    try:
        if args.output.exists():
            raise UsageError(
                "the output file exists", code="output_exists", location=str(args.output)
            )
        traces = shipped_traces(args.hard_seeds, originals=not args.no_originals)
        written = collect(args.base_url.rstrip("/"), args.model, args.output, traces)
    except ContinuityError as exc:
        print(f"error: {exc.code} at {exc.location}: {exc.message}", file=sys.stderr)
        return 2
    print(f"{written} answers in {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
