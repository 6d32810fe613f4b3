"""The shared store's backend contract, run against both backends: a directory, and an
S3 API server on loopback (moto's, which implements S3's conditional writes), through
the real s3fs client. Then the shared store over each: publish, fetch, verify."""

from __future__ import annotations

import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from continuity.digest import digest_bytes
from continuity.errors import ContinuityError, ObjectCorrupt, StoreError
from continuity.store import (
    LocalBackend,
    SharedStore,
    Store,
    collect_shared_garbage,
    open_backend,
    verify_shared,
)
from continuity.store._records import Ref
from continuity.store.backends import Backend
from tests.shared_backends import bucket, s3_options

boto3 = pytest.importorskip("boto3")
pytest.importorskip("moto.server")


def test_create_writes_only_an_absent_name(backend: Backend) -> None:
    assert backend.create("objects/ab/one", b"first") is True
    assert backend.create("objects/ab/one", b"second") is False
    found = backend.get("objects/ab/one")
    assert found is not None and found[0] == b"first"
    assert backend.get("objects/ab/none") is None


def test_replace_is_a_compare_and_swap(backend: Backend) -> None:
    assert backend.replace("refs/r.json", b"v1", None) is True
    assert backend.replace("refs/r.json", b"again", None) is False  # it exists now
    found = backend.get("refs/r.json")
    assert found is not None
    assert found[0] == b"v1"
    version = found[1]
    assert backend.replace("refs/r.json", b"v2", version) is True
    assert backend.replace("refs/r.json", b"stale", version) is False
    now = backend.get("refs/r.json")
    assert now is not None and now[0] == b"v2" and now[1] != version


def test_names_and_delete(backend: Backend) -> None:
    for name in ("actions/ab/k1.json", "actions/cd/k2.json", "objects/ab/o"):
        backend.create(name, b"x")
    assert backend.names("actions/") == ["actions/ab/k1.json", "actions/cd/k2.json"]
    assert backend.names("actions/ab/") == ["actions/ab/k1.json"]
    backend.delete("actions/ab/k1.json")
    backend.delete("actions/ab/k1.json")  # deleting an absent name is no error
    assert backend.names("actions/") == ["actions/cd/k2.json"]


def _race(count: int, work: Callable[[int], Any]) -> list[Any]:
    results: list[Any] = [None] * count
    start = threading.Barrier(count)

    def run(i: int) -> None:
        start.wait()
        results[i] = work(i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def test_concurrent_writers_of_one_object_write_it_once(backend: Backend) -> None:
    won = _race(8, lambda i: backend.create("objects/ab/same", b"identical bytes"))
    assert won.count(True) == 1
    found = backend.get("objects/ab/same")
    assert found is not None and found[0] == b"identical bytes"


def test_concurrent_writers_of_one_ref_lose_no_update(backend: Backend, tmp_path: Path) -> None:
    """Each writer adds its own name to the ref's meta by compare and swap: all are
    there at the end, whoever won each round."""
    shared = SharedStore(Store(tmp_path / "local"), backend)

    def add(i: int) -> Ref | None:
        def update(current: Ref | None) -> Ref:
            meta = dict(current.meta) if current is not None else {}
            meta[f"writer-{i}"] = True
            return Ref(name="runs/r", updated_at="t", objects=[], actions=[], meta=meta)

        return shared.swap_ref("runs/r", update)

    _race(6, add)
    final = shared.get_ref("runs/r")
    assert final is not None and sorted(final.meta) == sorted(f"writer-{i}" for i in range(6))


def _built(store: Store, marker: bytes = b"") -> str:
    """A unit-like action in `store`: a tree output (a blob and a subtree); another
    `marker` gives another unit, with a context of its own."""
    folder = store.root.parent / f"tree-{uuid.uuid4().hex[:6]}"
    (folder / "sub").mkdir(parents=True)
    (folder / "unit.json").write_bytes(b'{"outcome": "correct"}')
    (folder / "sub" / "context.txt").write_bytes(b"what the reader saw" + marker)
    output = store.put_dir(folder)
    key = digest_bytes(marker) if marker else "ab" + "0" * 62
    store.record_action(key, kind="unit", output=output, meta={"repeat": 1})
    return key


def _tamper_context(store: Store, key: str, backend: Backend) -> tuple[str, str]:
    """Overwrite, in `backend`, the context blob of `_built`'s unit `key`; its digest
    and its name there."""
    entry = store.get_action(key)
    assert entry is not None
    leaf = next(d for d in store.walk(entry.output) if store.get_blob(d) == b"what the reader saw")
    name = f"objects/{leaf[:2]}/{leaf}"
    found = backend.get(name)
    assert found is not None and backend.replace(name, b"tampered", found[1])
    return leaf, name


def test_an_action_published_on_one_machine_is_fetched_whole_on_another(
    backend: Backend, tmp_path: Path
) -> None:
    here, there = Store(tmp_path / "here"), Store(tmp_path / "there")
    key = _built(here)
    publisher = SharedStore(here, backend)
    assert publisher.push_action(key) is True
    assert publisher.push_action(key) is False  # the first publisher's entry stands
    fetcher = SharedStore(there, backend)
    entry = fetcher.pull_action(key)
    assert entry is not None and there.get_action(key) is not None
    assert there.action_path(key).read_bytes() == here.action_path(key).read_bytes()
    restored = tmp_path / "restored"
    there.restore_tree(entry.output.digest, restored)
    assert (restored / "sub" / "context.txt").read_bytes() == b"what the reader saw"
    assert fetcher.pull_action("cd" + "0" * 62) is None  # not shared: None, no error


def test_a_corrupt_shared_object_never_reaches_the_local_store(
    backend: Backend, tmp_path: Path
) -> None:
    here, there = Store(tmp_path / "here"), Store(tmp_path / "there")
    key = _built(here)
    SharedStore(here, backend).push_action(key)
    leaf, name = _tamper_context(here, key, backend)
    with pytest.raises(ObjectCorrupt) as caught:
        SharedStore(there, backend).pull_action(key)
    assert caught.value.code == "object_corrupt" and name in (caught.value.location or "")
    assert there.get_action(key) is None and not there.has_object(leaf)
    assert not there.has_object(digest_bytes(b"tampered"))  # never stored under its own


def test_a_corrupt_shared_action_entry_is_object_corrupt(backend: Backend, tmp_path: Path) -> None:
    key = "ef" + "1" * 62
    backend.create(f"actions/ef/{key}.json", b"not an entry")
    with pytest.raises(ObjectCorrupt) as caught:
        SharedStore(Store(tmp_path / "s"), backend).pull_action(key)
    assert caught.value.code == "object_corrupt"


def test_a_ref_that_never_stops_changing_is_contended(
    backend: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = SharedStore(Store(tmp_path / "s"), backend)
    monkeypatch.setattr(type(backend), "replace", lambda self, name, data, version: False)
    pauses: list[float] = []
    monkeypatch.setattr("continuity.store.backends.time.sleep", pauses.append)
    with pytest.raises(StoreError) as caught:
        shared.swap_ref("runs/r", lambda current: Ref(name="runs/r", updated_at="t"))
    assert caught.value.code == "store_ref_contended"
    assert len(pauses) == 64 and max(pauses) <= 0.2  # each lost round backs off, bounded


@pytest.mark.parametrize("url", ["ftp://host/store", "s3://", "gs://bucket/store"])
def test_an_unsupported_store_url_is_refused(url: str) -> None:
    with pytest.raises(StoreError) as caught:
        open_backend(url)
    assert caught.value.code == "store_backend_unsupported" and caught.value.location == url


def test_a_missing_bucket_or_server_is_store_backend_failed_when_opened(s3_endpoint: str) -> None:
    cases = [
        ("s3://no-such-bucket/store", s3_endpoint),
        (f"s3://{bucket(s3_endpoint)}/store", "http://127.0.0.1:9"),  # nothing listens
    ]
    for url, endpoint in cases:
        options = s3_options(endpoint)
        options["config_kwargs"] = {"retries": {"max_attempts": 1}, "connect_timeout": 1}
        with pytest.raises(StoreError) as caught:
            open_backend(url, **options)
        assert caught.value.code == "store_backend_failed" and caught.value.location == url


def test_a_local_backend_refuses_names_that_leave_it(tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path / "shared")
    for name in ("../escape", "objects/../../x", ".locks/x", ""):
        with pytest.raises(StoreError) as caught:
            backend.get(name)
        assert caught.value.code == "store_backend_failed"
    assert msgspec.json.encode(backend.names("")) == b"[]"


def test_an_s3_store_without_s3fs_is_unsupported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "s3fs", None)  # import fails as if absent
    with pytest.raises(StoreError) as caught:
        open_backend("s3://bucket/store")
    assert caught.value.code == "store_backend_unsupported"


def test_a_shared_store_is_scrubbed_as_a_local_one_is(backend: Backend, tmp_path: Path) -> None:
    """A clean shared store verifies; a tampered object is moved under quarantine/ and
    the entry reaching it is orphaned; a corrupt ref is moved aside too."""
    here = Store(tmp_path / "here")
    key = _built(here)
    shared = SharedStore(here, backend)
    shared.push_action(key)
    shared.swap_ref("runs/r", lambda current: Ref(name="runs/r", updated_at="t", actions=[key]))
    clean = verify_shared(backend)
    assert clean.corrupt == 0 and not clean.orphaned_actions
    assert clean.counts["action"].checked == 1 and clean.counts["ref"].checked == 1
    _, name = _tamper_context(here, key, backend)
    ref = backend.get("refs/runs/r.json")
    assert ref is not None and backend.replace("refs/runs/r.json", b"{}", ref[1])
    report = verify_shared(backend)
    assert [(f.kind, f.path) for f in report.findings] == [
        ("object", name),
        ("ref", "refs/runs/r.json"),
    ]
    assert report.orphaned_actions == [key] and backend.get(name) is None
    assert all(f.quarantined_to.startswith("quarantine/") for f in report.findings)
    assert len(backend.names("quarantine/")) == 2


def test_doit_verify_on_a_shared_store_fails_on_damage_with_its_code(tmp_path: Path) -> None:
    from rules.store import _verify

    shared = tmp_path / "shared"
    backend = open_backend(str(shared))
    backend.create("objects/ab/" + "ab" * 32, b"not these bytes")
    with pytest.raises(StoreError) as caught:
        _verify(shared_store=str(shared), out=str(tmp_path / "out"))
    assert caught.value.code == "store_corrupt"
    assert (tmp_path / "out" / "verify" / "report.json").exists()
    assert "verify report at" in _verify(shared_store=str(shared), out=str(tmp_path / "out"))
    with pytest.raises(ContinuityError) as refused:
        _verify(shared_store=str(shared), repair=True, out=str(tmp_path / "out"))
    assert refused.value.code == "option_invalid" and refused.value.location == "--repair"


def test_stat_gives_each_file_its_last_write_time_and_size(backend: Backend) -> None:
    before = time.time()
    backend.create("objects/ab/o", b"x")
    backend.create("actions/ab/k.json", b"y")
    found = backend.stat("objects/")
    assert list(found) == ["objects/ab/o"] and found["objects/ab/o"].size == 1
    assert before - 5 <= found["objects/ab/o"].modified <= time.time() + 5  # S3: whole seconds


def test_gc_of_a_shared_store_keeps_what_its_refs_and_recent_plans_reach(
    backend: Backend, tmp_path: Path
) -> None:
    """Roots: refs outside plans/ and the newest --keep-plans plans. An unreachable
    unit goes (its entry and the objects only it reached) once past the grace period;
    an older plan goes with what only it reached; a dry run deletes nothing."""
    here = Store(tmp_path / "here")
    shared = SharedStore(here, backend)
    kept, planned, orphan = _built(here), _built(here, b"planned"), _built(here, b"orphan")
    for key in (kept, planned, orphan):
        shared.push_action(key)
    shared.swap_ref("runs/r", lambda current: Ref(name="runs/r", updated_at="t", actions=[kept]))
    old_plan = shared.record_plan("units", actions=[orphan])
    shared.record_plan("units", actions=[planned])
    objects = len(backend.names("objects/"))

    young = collect_shared_garbage(backend, keep_plans=1, grace_seconds=3600)
    assert young.removed_actions == 0 and young.young_skipped > 0  # all just written
    assert young.removed_plans == [old_plan] and not backend.names(f"refs/{old_plan}")

    later = time.time() + 7200
    preview = collect_shared_garbage(backend, keep_plans=1, dry_run=True, now=later)
    assert preview.removed_actions == 1 and preview.removed_objects > 0
    assert len(backend.names("objects/")) == objects  # a dry run deletes nothing
    report = collect_shared_garbage(backend, keep_plans=1, now=later)
    assert (report.removed_actions, report.kept_actions) == (1, 2)
    assert report.removed_objects == preview.removed_objects and report.removed_bytes > 0
    assert len(backend.names("objects/")) == objects - report.removed_objects
    for key in (kept, planned):  # what the roots reach still fetches whole
        assert SharedStore(Store(tmp_path / f"fetch-{key[:6]}"), backend).pull_action(key)
    assert SharedStore(Store(tmp_path / "gone"), backend).pull_action(orphan) is None
    assert verify_shared(backend).corrupt == 0


def test_doit_gc_on_a_shared_store_and_its_refusals(tmp_path: Path) -> None:
    from rules.store import _gc

    shared = tmp_path / "shared"
    open_backend(str(shared)).create("objects/ab/" + "ab" * 32, b"unreachable")
    line = _gc(shared_store=str(shared), dry_run=True, grace=0.0)
    assert "would remove 1 objects" in line and shared.as_uri() in line
    with pytest.raises(ContinuityError) as caught:
        _gc(shared_store="ftp://host/store")
    assert caught.value.code == "store_backend_unsupported"
    with pytest.raises(ContinuityError) as bad:
        _gc(shared_store=str(tmp_path / "never-made"), grace=-1.0)
    assert bad.value.code == "option_invalid" and bad.value.location == "--grace"
    assert not (tmp_path / "never-made").exists()  # refused before it was opened


def test_an_s3_server_that_ignores_conditional_writes_is_refused(
    s3_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opening an s3:// store writes a probe twice (If-None-Match) and once with a stale
    If-Match: a server that lets either through cannot hold refs or accounts."""
    from continuity.store import backends

    url = f"s3://{bucket(s3_endpoint)}/store"
    real = backends.S3Backend._conditional
    monkeypatch.setattr(backends, "_CONDITIONS_CHECKED", set())

    def careless(self: Any, name: str, data: bytes, **condition: str) -> str:
        return real(self, name, data)  # every condition dropped, as such a server would

    monkeypatch.setattr(backends.S3Backend, "_conditional", careless)
    with pytest.raises(StoreError) as caught:
        open_backend(url, **s3_options(s3_endpoint))
    assert caught.value.code == "store_backend_unsupported" and caught.value.location == url
    monkeypatch.setattr(backends.S3Backend, "_conditional", real)
    backend = open_backend(url, **s3_options(s3_endpoint))  # moto honours them
    assert backend.names("conditions-probe/") == []  # the probe is gone


def test_a_read_beside_busy_writers_is_whole_and_never_fails(backend: Backend) -> None:
    """A document other writers keep replacing (a busy cost-cap account) is still read:
    its bytes and tag come together (on S3 one ``GetObject``, whose ETag is the bytes'
    MD5), never a "kept changing while read" failure."""
    import hashlib

    backend.create("accounts/busy.json", b"0")
    stop = threading.Event()

    def write() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            found = backend.get("accounts/busy.json")
            assert found is not None
            backend.replace("accounts/busy.json", str(n).encode(), found[1])

    writers = [threading.Thread(target=write) for _ in range(2)]
    for writer in writers:
        writer.start()
    try:
        for _ in range(150):
            found = backend.get("accounts/busy.json")
            assert found is not None and found[0].isdigit()
            if backend.url.startswith("s3://"):
                assert found[1].strip('"') == hashlib.md5(found[0]).hexdigest()
    finally:
        stop.set()
        for writer in writers:
            writer.join(30)
