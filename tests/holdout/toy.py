"""A tiny, obviously invented holdout source: six families in two groups.

Each family is one short `imported` trace with a free-recall probe and an abstention
probe, written with the trace schema; `write_source` lays out a manifest, the traces and a
statistical spec the way an importer does, and returns the source triple.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path

from continuity.holdout import (
    GroupSpec,
    HoldoutManifest,
    HoldoutSource,
    ManifestFamily,
    SelectionSpec,
    StatisticalSpec,
    encode_json,
)
from continuity.traces.schema import (
    SCHEMA_VERSION,
    AbstentionExpectation,
    AssistantMessage,
    FreeRecallExpectation,
    OwnerMessage,
    Probe,
    Session,
    Trace,
    encode_trace,
)

GROUPS = ("north", "south")
FAMILIES = (
    ("toy-north-1", "north", "glimmerfern", "Zorvik"),
    ("toy-north-2", "north", "quillberry", "Osmarra"),
    ("toy-north-3", "north", "moonwhisk", "Treval"),
    ("toy-south-1", "south", "brackenlute", "Imbry"),
    ("toy-south-2", "south", "saltpetal", "Quenna"),
    ("toy-south-3", "south", "duskmallow", "Ferrow"),
)


def toy_trace(family_id: str, plant: str, friend: str, *, family: str = "imported") -> Trace:
    """One invented conversation: a friend asks the owner to water a made-up plant."""
    return Trace(
        schema_version=SCHEMA_VERSION,
        trace_id=family_id,
        fictional=True,
        family=family,  # type: ignore[arg-type]
        scenario="toy-garden",
        title=f"Toy garden chat {family_id}",
        sessions=(
            Session(
                session_id="s1",
                date="2031-04-02",
                turns=(
                    OwnerMessage(
                        turn_id="g7x-1",
                        text=f"{friend} asked me to water the {plant} on Thursday at 7.",
                    ),
                    AssistantMessage(turn_id="g7x-2", text="Noted."),
                ),
            ),
        ),
        probes=(
            Probe(
                probe_id="p1",
                text=f"Which plant did {friend} want watered?",
                expectation=FreeRecallExpectation(
                    answer=f"the {plant}", evidence=("g7x-1",), source_category=4
                ),
            ),
            Probe(
                probe_id="p2",
                text=f"What did {friend} say about the marmalade zeppelin?",
                expectation=AbstentionExpectation(never_mentioned=("marmalade zeppelin",)),
            ),
        ),
    )


def write_source(
    root: Path,
    *,
    families: Sequence[tuple[str, str, str, str]] = FAMILIES,
    groups: Sequence[str] = GROUPS,
    per_group: int = 2,
    edit: Callable[[str, Trace], Trace] | None = None,
) -> HoldoutSource:
    """Write manifest.json, traces/<id>.json and spec.json under `root`; `edit` may
    change a family's trace before it is written (its sha256 follows the bytes)."""
    (root / "traces").mkdir(parents=True, exist_ok=True)
    listed = []
    for family_id, group, plant, friend in families:
        trace = toy_trace(family_id, plant, friend)
        if edit is not None:
            trace = edit(family_id, trace)
        data = encode_trace(trace)
        (root / "traces" / f"{family_id}.json").write_bytes(data)
        listed.append(
            ManifestFamily(
                family_id=family_id,
                group=group,
                trace=f"traces/{family_id}.json",
                sha256=hashlib.sha256(data).hexdigest(),
            )
        )
    manifest = HoldoutManifest(source="toy", description="invented", families=tuple(listed))
    spec = StatisticalSpec(
        source="toy",
        groups=tuple(GroupSpec(name=g) for g in groups),
        selection=SelectionSpec(per_group=per_group),
    )
    return write_files(root, manifest, spec)


def write_files(root: Path, manifest: HoldoutManifest, spec: StatisticalSpec) -> HoldoutSource:
    data = encode_json(manifest)
    (root / "manifest.json").write_bytes(data)
    (root / "spec.json").write_bytes(encode_json(spec))
    return HoldoutSource(
        root / "manifest.json", hashlib.sha256(data).hexdigest(), root / "spec.json"
    )


def resign(source: HoldoutSource) -> HoldoutSource:
    """The source with the sha256 of the manifest's current bytes."""
    digest = hashlib.sha256(source.manifest.read_bytes()).hexdigest()
    return HoldoutSource(source.manifest, digest, source.spec)


def doit_args(source: HoldoutSource) -> list[str]:
    return [
        "--manifest",
        str(source.manifest),
        "--manifest-sha256",
        source.manifest_sha256,
        "--statistical-spec",
        str(source.spec),
    ]
