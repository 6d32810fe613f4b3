"""`doit holdout_freeze` and `load_frozen`: a checked source, frozen into the store.

Freezing re-validates the source, requires a clean overlap report for the same manifest
and spec made against the current references and rules, puts every trace into the store
(one blob each, plus a trace key whose action entry resolves to it) and writes the
freeze record (`FreezeRecord`) as a store object under the ref
``holdout/<manifest sha256>/<spec sha256>``. The record has no timestamp: freezing the
same source again writes nothing new (``cached``).

The record binds the **tooling digest** (`TOOLING_CODE`: the holdout modules and the trace
validation code) and the **runtime digest** (the Python implementation and version, and
the msgspec and blake3 versions). `load_frozen` finds the freeze, refuses one made by
other tooling or another runtime, and re-hashes every trace file against the manifest
and the store's blob. Loading writes nothing.
"""

from __future__ import annotations

import importlib.metadata
import platform
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import msgspec

from continuity.digest import KeySpec, code_digest, digest_bytes, value_digest
from continuity.errors import HoldoutError, ObjectMissing, RecordCorrupt
from continuity.holdout.overlap import read_report, rules_digest
from continuity.holdout.references import References, project_references
from continuity.holdout.schema import (
    FREEZE_SCHEMA,
    FreezeRecord,
    FrozenFamily,
    RuntimeInfo,
    StatisticalSpec,
    encode_json,
)
from continuity.holdout.source import HoldoutSource, SourceFiles, read_source
from continuity.holdout.validate import ValidatedFamily, read_family, validate_source
from continuity.store import ObjectRef, Store
from continuity.traces.bounds import estimate_tokens
from continuity.traces.keys import VALIDATION_CODE

__all__ = [
    "TOOLING_CODE",
    "TRACE_KEY_SALT",
    "FreezeResult",
    "FrozenHoldout",
    "freeze_ref",
    "freeze_source",
    "load_frozen",
    "runtime_digest",
    "runtime_info",
    "tooling_digest",
    "trace_key",
]

TRACE_KEY_SALT = "holdout-trace-v1"
TOOLING_CODE: tuple[str, ...] = (
    "continuity.holdout.binding",
    "continuity.holdout.freeze",
    "continuity.holdout.overlap",
    "continuity.holdout.references",
    "continuity.holdout.schema",
    "continuity.holdout.selection",
    "continuity.holdout.source",
    "continuity.holdout.tokens",
    "continuity.holdout.validate",
    *VALIDATION_CODE,
)


def tooling_digest() -> str:
    """The code digest of the holdout modules and the trace validation code."""
    return code_digest(TOOLING_CODE)


def runtime_info() -> RuntimeInfo:
    return RuntimeInfo(
        python=f"{sys.implementation.name} {platform.python_version()}",
        msgspec=importlib.metadata.version("msgspec"),
        blake3=importlib.metadata.version("blake3"),
    )


def runtime_digest() -> str:
    """The digest of `runtime_info` (the interpreter and the hashing/decoding libraries)."""
    return value_digest(("continuity-holdout-runtime", runtime_info()))


def trace_key(trace_id: str, blob: str) -> KeySpec:
    """The key of a holdout trace: like a user trace file's, salted for holdouts."""
    return KeySpec(
        kind="trace",
        salt=TRACE_KEY_SALT,
        code=code_digest(VALIDATION_CODE),
        params={"family": "imported", "trace_id": trace_id},
        inputs={"source": blob},
    )


def freeze_ref(manifest_sha256: str, spec_sha256: str) -> str:
    return f"holdout/{manifest_sha256}/{spec_sha256}"


@dataclass(frozen=True)
class FreezeResult:
    record: FreezeRecord
    digest: str
    ref: str
    status: Literal["frozen", "cached"]


def _check_report(files: SourceFiles, report_path: str, references: References) -> str:
    """The rules digest of a clean, current report for this source.

    Raises:
        HoldoutError: ``holdout_overlap_mismatch``, ``holdout_overlap_stale``,
            ``holdout_overlap_found`` (and `read_report`'s codes).
    """
    report = read_report(Path(report_path))
    if (report.manifest_sha256, report.spec_sha256) != (
        files.source.manifest_sha256,
        files.spec_sha256,
    ):
        raise HoldoutError(
            "the overlap report is for another manifest or spec; run doit holdout_overlap "
            "on this source",
            code="holdout_overlap_mismatch",
            location=report_path,
        )
    current = rules_digest()
    if report.references_digest != references.digest or report.rules_digest != current:
        what = "references" if report.references_digest != references.digest else "rules"
        raise HoldoutError(
            f"the overlap report was made against other {what} than the current ones "
            "(expanded references invalidate older reports); run doit holdout_overlap again",
            code="holdout_overlap_stale",
            location=report_path,
        )
    if report.overlaps:
        raise HoldoutError(
            f"the overlap report lists {len(report.overlaps)} overlaps; a source with "
            "overlaps is not frozen",
            code="holdout_overlap_found",
            location=report_path,
        )
    return current


def _store_family(store: Store, family: ValidatedFamily) -> FrozenFamily:
    blob = store.put_blob(family.data)
    spec = trace_key(family.trace.trace_id, blob.digest)
    key = spec.key()
    if store.get_action(key) is None:
        meta = {
            "trace_id": family.trace.trace_id,
            "family": family.trace.family,
            "bytes": len(family.data),
            "estimated_tokens": estimate_tokens(family.trace),
            "holdout_group": family.family.group,
            "sha256": family.family.sha256,
        }
        store.record_action(key, kind="trace", output=blob, inputs=dict(spec.inputs), meta=meta)
    return FrozenFamily(
        family_id=family.family.family_id,
        group=family.family.group,
        trace=family.family.trace,
        sha256=family.family.sha256,
        blob=blob.digest,
        size=blob.size,
        key=key,
        probes=len(family.trace.probes),
    )


def freeze_source(
    store: Store,
    source: HoldoutSource,
    overlap: str,
    *,
    references: References | None = None,
) -> FreezeResult:
    """Validate `source`, check its overlap report (path `overlap`) and freeze it.

    `references` defaults to `project_references()` (a test passes its own).

    Raises:
        HoldoutError: every code of `validate_source`, ``holdout_file_unreadable``,
            ``holdout_overlap_invalid``, ``holdout_overlap_mismatch``,
            ``holdout_overlap_stale``, ``holdout_overlap_found``. Nothing is stored
            before every check has passed.
    """
    validated = validate_source(source)
    files = validated.files
    current = references or project_references()
    rules = _check_report(files, overlap, current)
    families = tuple(_store_family(store, family) for family in validated.families)
    record = FreezeRecord(
        schema=FREEZE_SCHEMA,
        source=files.manifest.source,
        manifest_sha256=source.manifest_sha256,
        spec_sha256=files.spec_sha256,
        spec=files.spec,
        overlap_references_digest=current.digest,
        overlap_rules_digest=rules,
        families=families,
        tooling_digest=tooling_digest(),
        runtime=runtime_info(),
        runtime_digest=runtime_digest(),
    )
    data = encode_json(record)
    digest = digest_bytes(data)
    name = freeze_ref(source.manifest_sha256, files.spec_sha256)
    existing = _existing(store, name)
    if existing == digest:
        return FreezeResult(record, digest, name, "cached")
    blob = store.put_blob(data)
    store.set_ref(
        name,
        objects=[blob, *(ObjectRef("blob", f.blob, f.size) for f in families)],
        actions=[f.key for f in families],
        meta={"freeze": digest, "source": files.manifest.source},
    )
    return FreezeResult(record, digest, name, "frozen")


def _existing(store: Store, name: str) -> str | None:
    """The freeze digest `name` pins, if the ref, its record and every blob it pins
    verify."""
    try:
        ref = store.get_ref(name)
    except RecordCorrupt:
        return None
    if ref is None or not all(store.verify_ref(o) for o in ref.objects):
        return None
    if not all(store.get_action(key) is not None for key in ref.actions):
        return None
    digest = ref.meta.get("freeze")
    return digest if isinstance(digest, str) else None


@dataclass(frozen=True)
class FrozenHoldout:
    """A loaded freeze: the source, its freeze record and the record's digest. It holds
    ids, groups and hashes only, never a trace's content."""

    source: HoldoutSource
    record: FreezeRecord
    freeze_digest: str

    @property
    def spec(self) -> StatisticalSpec:
        return self.record.spec

    @property
    def families(self) -> tuple[FrozenFamily, ...]:
        return self.record.families

    def family(self, family_id: str) -> FrozenFamily:
        for family in self.record.families:
            if family.family_id == family_id:
                return family
        raise KeyError(family_id)

    def group_sizes(self) -> dict[str, int]:
        sizes = {group.name: 0 for group in self.spec.groups}
        for family in self.families:
            sizes[family.group] += 1
        return sizes


def _not_frozen(name: str, why: str) -> HoldoutError:
    return HoldoutError(
        f"{why}; run doit holdout_freeze on this source first",
        code="holdout_not_frozen",
        location=f"ref {name}",
    )


def _read_record(store: Store, name: str) -> tuple[FreezeRecord, str]:
    try:
        ref = store.get_ref(name)
    except RecordCorrupt:
        raise _not_frozen(name, "the freeze ref is corrupt") from None
    if ref is None or not isinstance(ref.meta.get("freeze"), str):
        raise _not_frozen(name, "this source (manifest and spec) has no freeze in the store")
    digest = str(ref.meta["freeze"])
    try:
        record = msgspec.json.decode(store.get_blob(digest), type=FreezeRecord)
    except (ObjectMissing, msgspec.MsgspecError):
        raise _not_frozen(name, "the freeze record is missing or unreadable") from None
    return record, digest


def _mismatch(what: str, message: str) -> HoldoutError:
    return HoldoutError(message, code="holdout_freeze_mismatch", location=what)


def _check_record(record: FreezeRecord, files: SourceFiles) -> None:
    if record.schema != FREEZE_SCHEMA or (record.manifest_sha256, record.spec_sha256) != (
        files.source.manifest_sha256,
        files.spec_sha256,
    ):
        raise _mismatch("record", "the freeze record is for another source")
    if record.tooling_digest != tooling_digest():
        raise _mismatch(
            "tooling",
            "the source was frozen by other holdout or trace-validation code; freeze it again "
            "with this checkout",
        )
    if record.runtime_digest != runtime_digest():
        raise _mismatch(
            "runtime",
            f"the source was frozen under {record.runtime.python} (msgspec "
            f"{record.runtime.msgspec}, blake3 {record.runtime.blake3}), not this runtime",
        )
    listed = [(f.family_id, f.group, f.trace, f.sha256) for f in files.manifest.families]
    frozen = [(f.family_id, f.group, f.trace, f.sha256) for f in record.families]
    if listed != frozen:
        raise _mismatch("manifest", "the freeze lists other families than the manifest")


def load_frozen(store: Store, source: HoldoutSource) -> FrozenHoldout:
    """The frozen source, after checking the freeze and re-hashing every trace.

    Raises:
        HoldoutError: `read_source`'s codes, ``holdout_not_frozen``,
            ``holdout_freeze_mismatch`` (location ``tooling``, ``runtime``, ``manifest``
            or ``record``), ``holdout_trace_hash_mismatch`` (a trace file that no longer
            hashes to the manifest's sha256, or whose bytes are not the store's blob).
    """
    files = read_source(source)
    name = freeze_ref(source.manifest_sha256, files.spec_sha256)
    record, digest = _read_record(store, name)
    _check_record(record, files)
    for index, frozen in enumerate(record.families):
        _, data = read_family(files, index)
        if digest_bytes(data) != frozen.blob or not store.has_object(frozen.blob):
            raise HoldoutError(
                f"the trace of {frozen.family_id} is not the frozen blob {frozen.blob[:16]} "
                "(or the store lost it)",
                code="holdout_trace_hash_mismatch",
                location=frozen.trace,
            )
    return FrozenHoldout(source, record, digest)
