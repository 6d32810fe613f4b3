"""`freeze_source` and `load_frozen`: the store record, idempotence, and every refusal
(nothing is stored by a refused freeze, nothing written by a refused load)."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

import continuity.holdout.freeze as freeze_module
from continuity.digest import digest_bytes
from continuity.errors import HoldoutError
from continuity.holdout import (
    HoldoutSource,
    References,
    check_overlap,
    freeze_source,
    load_frozen,
    validate_source,
)
from continuity.holdout.freeze import TRACE_KEY_SALT, runtime_digest, tooling_digest
from continuity.holdout.overlap import write_report
from continuity.holdout.references import Reference
from continuity.holdout.schema import FreezeRecord
from continuity.store import Store
from tests.conftest import store_files
from tests.holdout.toy import resign, write_source

PLAIN = References((Reference("prompt/plain", (("$", "Answer plainly, in one line."),)),))


def overlap_report(source: HoldoutSource, out: Path, references: References = PLAIN) -> str:
    out.mkdir(parents=True, exist_ok=True)
    report = check_overlap(validate_source(source), references)
    try:
        return str(write_report(report, out, "toy"))
    except HoldoutError:
        return str(out / "overlap.json")


@pytest.fixture
def source(tmp_path: Path) -> HoldoutSource:
    return write_source(tmp_path / "src")


@pytest.fixture
def report(source: HoldoutSource, tmp_path: Path) -> str:
    return overlap_report(source, tmp_path / "overlap")


def refused_freeze(
    store: Store, source: HoldoutSource, report: str, references: References = PLAIN
) -> HoldoutError:
    with pytest.raises(HoldoutError) as err:
        freeze_source(store, source, report, references=references)
    assert store_files(store) == {}  # nothing is stored before every check passed
    return err.value


def test_freezing_writes_a_content_addressed_record(
    store: Store, source: HoldoutSource, report: str
) -> None:
    result = freeze_source(store, source, report, references=PLAIN)
    assert result.status == "frozen"
    manifest_sha = source.manifest_sha256
    spec_sha = result.record.spec_sha256
    assert result.ref == f"holdout/{manifest_sha}/{spec_sha}"
    ref = store.get_ref(result.ref)
    assert ref is not None and ref.meta["freeze"] == result.digest
    data = store.get_blob(result.digest)
    assert digest_bytes(data) == result.digest
    record = msgspec.json.decode(data, type=FreezeRecord)
    assert record == result.record
    assert record.schema == "continuity-holdout-freeze-v1"
    assert (record.manifest_sha256, record.source) == (manifest_sha, "toy")
    assert record.overlap_references_digest == PLAIN.digest
    assert record.spec.groups[0].name == "north"
    assert (record.tooling_digest, record.runtime_digest) == (tooling_digest(), runtime_digest())
    assert record.runtime.python and record.runtime.msgspec and record.runtime.blake3
    assert [f.family_id for f in record.families][:3] == [
        "toy-north-1",
        "toy-north-2",
        "toy-north-3",
    ]
    for family in record.families:
        trace = (source.manifest.parent / family.trace).read_bytes()
        assert store.get_blob(family.blob) == trace and family.size == len(trace)
        entry = store.get_action(family.key)
        assert entry is not None and entry.output.digest == family.blob
        assert entry.meta["trace_id"] == family.family_id
        assert entry.meta["family"] == "imported" and family.probes == 2
    assert {o.digest for o in ref.objects} == {result.digest, *(f.blob for f in record.families)}
    assert set(ref.actions) == {f.key for f in record.families}
    assert "glimmerfern" not in json.dumps(ref.meta) + json.dumps(
        [store.get_action(f.key).meta for f in record.families]  # type: ignore[union-attr]
    )
    assert TRACE_KEY_SALT == "holdout-trace-v1"


def test_freezing_twice_writes_nothing_new(
    store: Store, source: HoldoutSource, report: str
) -> None:
    first = freeze_source(store, source, report, references=PLAIN)
    before = store_files(store)
    second = freeze_source(store, source, report, references=PLAIN)
    assert (second.status, second.digest, second.record) == ("cached", first.digest, first.record)
    assert store_files(store) == before


def test_a_report_for_another_manifest_is_refused(
    store: Store, source: HoldoutSource, report: str
) -> None:
    data = json.loads(source.manifest.read_bytes())
    data["description"] = "a later edition"
    source.manifest.write_text(json.dumps(data))
    error = refused_freeze(store, resign(source), report)
    assert (error.code, error.location) == ("holdout_overlap_mismatch", report)


def test_expanded_references_make_an_older_report_stale(
    store: Store, source: HoldoutSource, report: str
) -> None:
    expanded = PLAIN.extended(Reference("prompt/new", (("$", "A new prompt, added later."),)))
    error = refused_freeze(store, source, report, references=expanded)
    assert (error.code, error.location) == ("holdout_overlap_stale", report)
    assert "references" in error.message


def test_changed_overlap_rules_make_an_older_report_stale(
    store: Store, source: HoldoutSource, report: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(freeze_module, "rules_digest", lambda: "0" * 64)
    error = refused_freeze(store, source, report)
    assert (error.code, error.location) == ("holdout_overlap_stale", report)


def test_a_report_with_overlaps_is_refused(
    store: Store, source: HoldoutSource, tmp_path: Path
) -> None:
    planted = PLAIN.extended(Reference("planted", (("$", "the glimmerfern"),)))
    report = overlap_report(source, tmp_path / "dirty", planted)
    error = refused_freeze(store, source, report, references=planted)
    assert (error.code, error.location) == ("holdout_overlap_found", report)


@pytest.mark.parametrize("content", [b"", b"[]", b'{"schema": "continuity-holdout-overlap-v0"}'])
def test_an_invalid_report_is_refused(
    store: Store, source: HoldoutSource, tmp_path: Path, content: bytes
) -> None:
    path = tmp_path / "overlap.json"
    path.write_bytes(content)
    assert refused_freeze(store, source, str(path)).code == "holdout_overlap_invalid"
    assert refused_freeze(store, source, str(tmp_path / "none")).code == "holdout_file_unreadable"


def test_freezing_revalidates_the_source(store: Store, source: HoldoutSource, report: str) -> None:
    trace = source.manifest.parent / "traces" / "toy-north-1.json"
    trace.write_bytes(trace.read_bytes().replace(b"Noted.", b"Noted!"))
    assert refused_freeze(store, source, report).code == "holdout_trace_hash_mismatch"


# -- loading --------------------------------------------------------------------------------


@pytest.fixture
def frozen_store(store: Store, source: HoldoutSource, report: str) -> Store:
    freeze_source(store, source, report, references=PLAIN)
    return store


def refused_load(store: Store, source: HoldoutSource) -> HoldoutError:
    before = store_files(store)
    with pytest.raises(HoldoutError) as err:
        load_frozen(store, source)
    assert store_files(store) == before  # a refused load writes nothing
    return err.value


def test_loading_verifies_and_exposes_ids_and_hashes_only(
    frozen_store: Store, source: HoldoutSource
) -> None:
    before = store_files(frozen_store)
    frozen = load_frozen(frozen_store, source)
    assert store_files(frozen_store) == before
    assert frozen.group_sizes() == {"north": 3, "south": 3}
    assert frozen.family("toy-south-2").group == "south"
    assert frozen.freeze_digest == digest_bytes(frozen_store.get_blob(frozen.freeze_digest))
    assert "glimmerfern" not in repr(frozen)
    with pytest.raises(KeyError):
        frozen.family("toy-west-1")


def test_an_unfrozen_source_is_refused(store: Store, source: HoldoutSource) -> None:
    error = refused_load(store, source)
    assert error.code == "holdout_not_frozen"
    assert error.location.startswith(f"ref holdout/{source.manifest_sha256}/")


def test_another_spec_is_another_source(frozen_store: Store, source: HoldoutSource) -> None:
    data = json.loads(source.spec.read_bytes())
    data["note"] = "changed after the freeze"
    source.spec.write_text(json.dumps(data))
    assert refused_load(frozen_store, source).code == "holdout_not_frozen"


def test_a_corrupt_freeze_ref_is_not_a_freeze(frozen_store: Store, source: HoldoutSource) -> None:
    ref = next((frozen_store.refs_dir / "holdout").rglob("*.json"))
    ref.write_text("{}")
    with pytest.raises(HoldoutError) as err:
        load_frozen(frozen_store, source)
    assert err.value.code == "holdout_not_frozen"


def test_a_tampered_trace_is_refused(frozen_store: Store, source: HoldoutSource) -> None:
    trace = source.manifest.parent / "traces" / "toy-south-1.json"
    trace.write_bytes(trace.read_bytes().replace(b"Noted.", b"Noted!"))
    error = refused_load(frozen_store, source)
    assert (error.code, error.location) == ("holdout_trace_hash_mismatch", str(trace.resolve()))


def test_a_lost_store_blob_is_refused(frozen_store: Store, source: HoldoutSource) -> None:
    blob = load_frozen(frozen_store, source).family("toy-north-3").blob
    path = frozen_store.object_path(blob)
    path.chmod(0o644)
    path.write_bytes(b"bit rot")
    with pytest.raises(HoldoutError) as err:
        load_frozen(frozen_store, source)
    assert (err.value.code, err.value.location) == (
        "holdout_trace_hash_mismatch",
        "traces/toy-north-3.json",
    )


@pytest.mark.parametrize("which", ["tooling", "runtime"])
def test_a_freeze_by_other_tooling_or_runtime_is_refused(
    frozen_store: Store, source: HoldoutSource, monkeypatch: pytest.MonkeyPatch, which: str
) -> None:
    monkeypatch.setattr(freeze_module, f"{which}_digest", lambda: "f" * 64)
    error = refused_load(frozen_store, source)
    assert (error.code, error.location) == ("holdout_freeze_mismatch", which)


def _repoint(store: Store, name: str, record: FreezeRecord) -> None:
    from continuity.holdout.schema import encode_json

    blob = store.put_blob(encode_json(record))
    ref = store.get_ref(name)
    assert ref is not None
    store.set_ref(name, objects=[blob], actions=ref.actions, meta={"freeze": blob.digest})


def test_a_ref_that_names_another_sources_record_is_refused(
    store: Store, source: HoldoutSource, report: str
) -> None:
    result = freeze_source(store, source, report, references=PLAIN)
    other = msgspec.structs.replace(result.record, manifest_sha256="0" * 64)
    _repoint(store, result.ref, other)
    assert refused_load(store, source).location == "record"


def test_a_record_listing_other_families_is_refused(
    store: Store, source: HoldoutSource, report: str
) -> None:
    result = freeze_source(store, source, report, references=PLAIN)
    fewer = msgspec.structs.replace(result.record, families=result.record.families[1:])
    _repoint(store, result.ref, fewer)
    error = refused_load(store, source)
    assert (error.code, error.location) == ("holdout_freeze_mismatch", "manifest")
