"""``doit import_locomo``: LoCoMo's archive as an external holdout source.

`import_locomo` reads LoCoMo's zip (`continuity.traces.locomo.read_zip`), converts every
conversation into an ``imported`` trace (`continuity.traces.locomo.convert`, where the
mapping is documented), validates each, and writes the source triple's files into a new
directory:

- ``traces/<trace id>.json``: each trace's canonical bytes;
- ``manifest.json``: one family per conversation, its group and its trace's sha256;
- ``statistical-spec.json``: the groups and the selection (``seeded-sha256-rank-v1``,
  two families per group, one repeat);
- ``import-report.json``: what was read and what was dropped, question by question
  (index, LoCoMo category and reason), and the archive's sha256.

**Groups** split the conversations by length: the ``shorter`` half and the ``longer``
half by the trace's token estimate (ties by trace id; an odd count puts the extra one in
``shorter``), so a selection of two per group always sets short and long conversations
side by side. The spec records each group's token range.

Nothing here depends on the clock, the machine or the archive's member order, so a rerun
on the same archive writes byte-identical files. The directory is written beside its
target and renamed into place only when complete: a failure leaves nothing behind.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import msgspec

from continuity.errors import HoldoutError
from continuity.holdout.schema import (
    GroupSpec,
    HoldoutManifest,
    ManifestFamily,
    SelectionSpec,
    StatisticalSpec,
    encode_json,
)
from continuity.inputs import ARCHIVE_MAX_BYTES, read_user_bytes
from continuity.outputs import write_output
from continuity.traces.bounds import estimate_tokens
from continuity.traces.locomo import CATEGORY_NAMES, DROP_REASONS, Imported, convert, read_zip
from continuity.traces.schema import encode_trace
from continuity.traces.validate import load_trace

__all__ = [
    "GROUPS",
    "IMPORTER",
    "IMPORT_REPORT_SCHEMA",
    "SOURCE",
    "ConversationCount",
    "DroppedQuestion",
    "ImportReport",
    "LocomoImport",
    "import_locomo",
]

IMPORTER = "continuity-locomo-import-v1"
IMPORT_REPORT_SCHEMA = "continuity-locomo-import-report-v1"
SOURCE = "locomo"
GROUPS = ("shorter", "longer")


class DroppedQuestion(msgspec.Struct, frozen=True, kw_only=True):
    trace_id: str
    question: int  # its index in the conversation's LoCoMo question list
    category: int  # LoCoMo's category (0 when the question names none)
    reason: str


class ConversationCount(msgspec.Struct, frozen=True, kw_only=True):
    trace_id: str
    group: str
    sessions: int
    turns: int
    estimated_tokens: int
    questions: int
    probes: int


class ImportReport(msgspec.Struct, frozen=True, kw_only=True):
    schema: str = IMPORT_REPORT_SCHEMA
    importer: str = IMPORTER
    archive_sha256: str
    conversations: tuple[ConversationCount, ...]
    questions: int
    questions_by_category: dict[str, int]
    probes: int
    probes_by_category: dict[str, int]
    dropped: tuple[DroppedQuestion, ...]
    dropped_by_reason: dict[str, int]
    reasons: dict[str, str]


class LocomoImport(msgspec.Struct, frozen=True, kw_only=True):
    """Where the source went, and the sha256 `--manifest-sha256` must quote."""

    output: str
    manifest: str
    manifest_sha256: str
    spec: str
    report: ImportReport


def _groups(imported: list[Imported]) -> dict[str, str]:
    ranked = sorted(imported, key=lambda i: (estimate_tokens(i.trace), i.trace.trace_id))
    half = -(-len(ranked) // 2)
    return {
        i.trace.trace_id: GROUPS[0] if rank < half else GROUPS[1] for rank, i in enumerate(ranked)
    }


def _spec(imported: list[Imported], groups: dict[str, str]) -> StatisticalSpec:
    described = []
    for name in GROUPS:
        sizes = [estimate_tokens(i.trace) for i in imported if groups[i.trace.trace_id] == name]
        span = f"{min(sizes):,}-{max(sizes):,}" if sizes else "none"
        described.append(
            GroupSpec(
                name=name,
                description=f"{name} half of the conversations by estimated tokens ({span})",
            )
        )
    return StatisticalSpec(
        source=SOURCE,
        groups=tuple(described),
        selection=SelectionSpec(per_group=2),
        repeats=1,
        note=(
            "LoCoMo (Maharana et al., ACL 2024), ten conversations; groups split them by "
            f"length; written by {IMPORTER}"
        ),
    )


def _report(archive: bytes, imported: list[Imported], groups: dict[str, str]) -> ImportReport:
    questions: dict[str, int] = {}
    probes: dict[str, int] = {}
    dropped: list[DroppedQuestion] = []
    for item in imported:
        for probe in item.trace.probes:
            probes[probe.category] = probes.get(probe.category, 0) + 1
        dropped.extend(
            DroppedQuestion(
                trace_id=item.trace.trace_id,
                question=drop.probe_index,
                category=drop.category,
                reason=drop.reason,
            )
            for drop in item.dropped
        )
    for item in imported:
        for category in item.categories:
            name = CATEGORY_NAMES.get(category, "unknown")
            key = f"{category} {name}"
            questions[key] = questions.get(key, 0) + 1
    reasons: dict[str, int] = {}
    for gone in dropped:
        reasons[gone.reason] = reasons.get(gone.reason, 0) + 1
    return ImportReport(
        archive_sha256=hashlib.sha256(archive).hexdigest(),
        conversations=tuple(
            ConversationCount(
                trace_id=i.trace.trace_id,
                group=groups[i.trace.trace_id],
                sessions=len(i.trace.sessions),
                turns=sum(len(s.turns) for s in i.trace.sessions),
                estimated_tokens=estimate_tokens(i.trace),
                questions=i.questions,
                probes=len(i.trace.probes),
            )
            for i in imported
        ),
        questions=sum(i.questions for i in imported),
        questions_by_category=dict(sorted(questions.items())),
        probes=sum(len(i.trace.probes) for i in imported),
        probes_by_category=dict(sorted(probes.items())),
        dropped=tuple(dropped),
        dropped_by_reason=dict(sorted(reasons.items())),
        reasons=dict(DROP_REASONS),
    )


def import_locomo(archive: Path, output: Path) -> LocomoImport:
    """Import LoCoMo's zip into a new directory `output` (see the module doc).

    Raises:
        HoldoutError: ``locomo_zip_unreadable``, ``locomo_format_invalid`` (the archive),
            ``locomo_output_exists``, ``locomo_output_invalid`` (the directory), before
            anything is written.
        InputError: ``input_not_a_file``, ``input_too_large`` (the archive, over
            `continuity.inputs.ARCHIVE_MAX_BYTES`).
        TraceInvalid: a converted trace fails validation (nothing is written).
    """
    output = output.expanduser().absolute()
    if output.exists() or output.is_symlink():
        raise HoldoutError(
            "the output directory exists; the import writes a new one",
            code="locomo_output_exists",
            location=str(output),
        )
    try:
        data = read_user_bytes(archive, limit=ARCHIVE_MAX_BYTES, what="the LoCoMo archive")
    except OSError as exc:
        raise HoldoutError(
            f"cannot read the LoCoMo archive: {exc.strerror or type(exc).__name__}",
            code="locomo_zip_unreadable",
            location=str(archive),
        ) from None
    imported = [convert(conversation) for conversation in read_zip(archive, data)]
    encoded = {i.trace.trace_id: encode_trace(i.trace) for i in imported}
    for trace_id, trace_bytes in encoded.items():
        load_trace(trace_bytes, source=f"{archive}:{trace_id}")  # raises TraceInvalid
    groups = _groups(imported)
    manifest = HoldoutManifest(
        source=SOURCE,
        description=f"LoCoMo locomo10 (archive sha256 {hashlib.sha256(data).hexdigest()})",
        families=tuple(
            ManifestFamily(
                family_id=trace_id,
                group=groups[trace_id],
                trace=f"traces/{trace_id}.json",
                sha256=hashlib.sha256(trace_bytes).hexdigest(),
            )
            for trace_id, trace_bytes in encoded.items()
        ),
    )
    report = _report(data, imported, groups)
    manifest_bytes = encode_json(manifest)
    staging = output.with_name(f".{output.name}.partial-{os.getpid()}")
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        staging.mkdir()
        for trace_id, trace_bytes in encoded.items():
            write_output(staging / "traces" / f"{trace_id}.json", trace_bytes)
        write_output(staging / "manifest.json", manifest_bytes)
        write_output(staging / "statistical-spec.json", encode_json(_spec(imported, groups)))
        write_output(staging / "import-report.json", encode_json(report))
        staging.rename(output)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise HoldoutError(
            f"cannot write the source: {exc.strerror or type(exc).__name__}",
            code="locomo_output_invalid",
            location=str(output),
        ) from None
    return LocomoImport(
        output=str(output),
        manifest=str(output / "manifest.json"),
        manifest_sha256=hashlib.sha256(manifest_bytes).hexdigest(),
        spec=str(output / "statistical-spec.json"),
        report=report,
    )
