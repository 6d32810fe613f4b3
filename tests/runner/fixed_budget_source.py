"""An invented holdout source for fixed-budget sizing: conversations of 15 probes each.

Each family is one short, obviously fictional `imported` conversation: the owner asks
for a courier note, an email search returns it (three identifiers, only in the tool
output), and the owner adds a remark. Its probes: three identifier probes (literal in
the tool result, so each has an annotated source and a reference path), six free-recall
and six abstention questions (no annotated source: full-budget envelopes). `frozen`
writes the source with `tests.holdout.toy.write_files`, checks its overlap against a
one-line test reference set and freezes it into `store`.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from continuity.holdout import (
    GroupSpec,
    HoldoutManifest,
    HoldoutSource,
    ManifestFamily,
    SelectionSpec,
    StatisticalSpec,
    check_overlap,
    freeze_source,
    validate_source,
)
from continuity.holdout.overlap import write_report
from continuity.holdout.references import Reference, References
from continuity.store import Store
from continuity.traces.schema import (
    SCHEMA_VERSION,
    AbstentionExpectation,
    AssistantMessage,
    Fact,
    FreeRecallExpectation,
    OwnerMessage,
    Probe,
    Session,
    ToolCall,
    ToolIdentifierExpectation,
    ToolResult,
    Trace,
    encode_trace,
)
from tests.holdout.toy import write_files

PLAIN = References((Reference("prompt/plain", (("$", "Answer plainly, in one line."),)),))
# family id, group, plant, friend, identifier stem
FAMILIES = (
    ("fb-north-1", "north", "glimmerfern", "Zorvik", "QZT"),
    ("fb-north-2", "north", "quillberry", "Osmarra", "WRX"),
    ("fb-north-3", "north", "moonwhisk", "Treval", "PLM"),
    ("fb-south-1", "south", "brackenlute", "Imbry", "KVD"),
    ("fb-south-2", "south", "saltpetal", "Quenna", "HJN"),
    ("fb-south-3", "south", "duskmallow", "Ferrow", "BYC"),
)
IDENTIFIER_PROBES = 3
FREE_RECALL = (
    ("Which light does the {plant} prefer?", "morning light"),
    ("When does {friend} want the {plant} watered?", "before noon"),
    ("How often should the {plant} be misted?", "twice weekly"),
    ("Which shelf suits the {plant}?", "the east shelf"),
    ("What colour is the pot for the {plant}?", "cobalt blue"),
    ("Who recommended the {plant}?", "a neighbour called Ulvane"),
)
ABSTENTION = (
    "marmalade zeppelin",
    "tangerine harpsichord",
    "velvet lighthouse",
    "copper toboggan",
    "saffron periscope",
    "walnut carousel",
)


def identifiers(stem: str) -> tuple[str, ...]:
    return tuple(f"{stem}-{n}{n + 3}{n + 7}-X{n}" for n in range(1, IDENTIFIER_PROBES + 1))


def fixed_trace(family_id: str, plant: str, friend: str, stem: str) -> Trace:
    """One invented conversation with 15 probes (see the module doc)."""
    crate, locker, slip = identifiers(stem)
    output = (
        f"Thread: courier note about the {plant} crate (1 message)\n\n"
        f"From: {friend} <{friend.lower()}@toy-courier.example>\n"
        f"The crate reference is {crate}.\nThe locker code is {locker}.\n"
        f"The pickup slip is {slip}.\n"
    )
    remark = (
        f"{friend} says the {plant} wants morning light, water before noon, misting twice "
        "weekly, the east shelf and its cobalt blue pot; a neighbour called Ulvane "
        "recommended it."
    )
    asks = (
        ("What crate reference did the courier note give?", crate),
        ("Which locker code was in the courier note?", locker),
        ("What pickup slip did the courier send?", slip),
    )
    probes = [
        Probe(
            probe_id=f"p{i + 1:02d}",
            text=text,
            expectation=ToolIdentifierExpectation(answer=Fact(value=value, evidence=("t3",))),
        )
        for i, (text, value) in enumerate(asks)
    ]
    probes += [
        Probe(
            probe_id=f"p{len(probes) + i + 1:02d}",
            text=text.format(plant=plant, friend=friend),
            expectation=FreeRecallExpectation(answer=answer, evidence=("t5",), source_category=4),
        )
        for i, (text, answer) in enumerate(FREE_RECALL)
    ]
    probes += [
        Probe(
            probe_id=f"p{len(probes) + i + 1:02d}",
            text=f"What did {friend} say about the {term}?",
            expectation=AbstentionExpectation(never_mentioned=(term,)),
        )
        for i, term in enumerate(ABSTENTION)
    ]
    call = ToolCall(call_id="c1", tool="email_search", arguments={"query": "courier note"})
    return Trace(
        schema_version=SCHEMA_VERSION,
        trace_id=family_id,
        fictional=True,
        family="imported",
        scenario="toy-courier",
        title=f"Toy courier chat {family_id}",
        sessions=(
            Session(
                session_id="s1",
                date="2031-05-03",
                turns=(
                    OwnerMessage(
                        turn_id="t1", text=f"Please find the courier note about the {plant}."
                    ),
                    AssistantMessage(turn_id="t2", tool_calls=(call,)),
                    ToolResult(
                        turn_id="t3",
                        call_id="c1",
                        tool="email_search",
                        tool_kind="email",
                        output=output,
                    ),
                    AssistantMessage(turn_id="t4", text="Found the courier note."),
                    OwnerMessage(turn_id="t5", text=remark),
                    AssistantMessage(turn_id="t6", text="Noted."),
                ),
            ),
        ),
        probes=tuple(probes),
    )


def write_fixed_source(root: Path, *, per_group: int = 2) -> HoldoutSource:
    """manifest.json, traces/<id>.json and spec.json of the six families under `root`."""
    (root / "traces").mkdir(parents=True, exist_ok=True)
    listed = []
    for family_id, group, plant, friend, stem in FAMILIES:
        data = encode_trace(fixed_trace(family_id, plant, friend, stem))
        (root / "traces" / f"{family_id}.json").write_bytes(data)
        listed.append(
            ManifestFamily(
                family_id=family_id,
                group=group,
                trace=f"traces/{family_id}.json",
                sha256=hashlib.sha256(data).hexdigest(),
            )
        )
    manifest = HoldoutManifest(source="fbtoy", description="invented", families=tuple(listed))
    spec = StatisticalSpec(
        source="fbtoy",
        groups=(GroupSpec(name="north"), GroupSpec(name="south")),
        selection=SelectionSpec(per_group=per_group),
    )
    return write_files(root, manifest, spec)


def frozen(store: Store, root: Path) -> HoldoutSource:
    """The source written under `root`, checked for overlap and frozen into `store`."""
    source = write_fixed_source(root / "source")
    report = check_overlap(validate_source(source), PLAIN)
    (root / "overlap").mkdir(parents=True, exist_ok=True)
    path = write_report(report, root / "overlap", "fbtoy")
    freeze_source(store, source, str(path), references=PLAIN)
    return source
