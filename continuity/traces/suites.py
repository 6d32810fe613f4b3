"""Build, validate, store and materialise the trace suites.

Each trace is an artifact keyed as `continuity.traces.keys` plans it (kind, version
salt, code digest, parameters, input keys). Building a suite looks every key up in the
store first and only generates, validates and stores what is missing, so a rerun after
a crash finishes only the missing traces. A suite is then recorded as a tree object
(``<trace-id>.json`` -> trace blob) under the ref ``traces/<suite>`` and materialised as
``out/traces/<suite>/<trace-id>.json`` plus ``manifest.json``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Literal

import msgspec

from continuity.digest import KeySpec, code_digest, digest_bytes, value_digest
from continuity.errors import InputError, TraceCollision, UsageError
from continuity.inputs import read_user_bytes
from continuity.outputs import resolve_out_path, write_json, write_output
from continuity.store import ObjectRef, Store, TreeEntry
from continuity.traces import generator
from continuity.traces.bounds import estimate_tokens
from continuity.traces.keys import (
    USER_TRACE_SALT,
    VALIDATION_CODE,
    Manifest,
    PlannedTrace,
    suite_dir,
    suite_specs,
)
from continuity.traces.schema import (
    TRACE_MAX_BYTES,
    RedactionExpectation,
    ToolIdentifierExpectation,
    Trace,
    encode_trace,
)
from continuity.traces.validate import load_trace, read_trace_file, validate_trace

__all__ = [
    "Progress",
    "Status",
    "SuiteItem",
    "SuiteResult",
    "build_suite",
    "read_user_trace",
    "store_trace_file",
    "suite_from_items",
]

Status = Literal["built", "cached"]
Progress = Callable[[int, int, str, str], None]


class SuiteItem(msgspec.Struct, frozen=True):
    trace_id: str
    key: str
    digest: str
    size: int
    status: Status


class SuiteResult(msgspec.Struct, frozen=True):
    suite: str
    items: tuple[SuiteItem, ...]
    tree: ObjectRef
    manifest_path: str

    @property
    def built(self) -> int:
        return sum(item.status == "built" for item in self.items)


def _trace_meta(trace: Trace, data: bytes) -> dict[str, object]:
    # Digests, never the values: a secret must not reach the store's metadata.
    values = []
    for probe in trace.probes:
        exp = probe.expectation
        if isinstance(exp, ToolIdentifierExpectation):
            values += [exp.answer.value, *(f.value for f in exp.superseded)]
        elif isinstance(exp, RedactionExpectation):
            values.append(exp.secret.value)
    return {
        "trace_id": trace.trace_id,
        "family": trace.family,
        "bytes": len(data),
        "estimated_tokens": estimate_tokens(trace),
        "value_digests": sorted({value_digest(("trace-value", v)) for v in values}),
    }


def _build_one(item: PlannedTrace, suite: str) -> tuple[Trace, bytes]:
    if item.source is not None:
        data = Path(item.source).read_bytes()
        trace = load_trace(data, source=item.source)
        if trace.family != suite:
            raise UsageError(
                f"{item.source} is family {trace.family!r}, not {suite}",
                code="suite_unknown",
                location=item.source,
            )
        return trace, data
    assert item.seed is not None
    trace = generator.generate_trace(item.seed, distractors=suite == "hard-distractors")
    validate_trace(trace, source=trace.trace_id)
    return trace, encode_trace(trace)


def build_suite(
    store: Store,
    suite: str,
    seeds: Sequence[int] | None = None,
    *,
    out_dir: Path | None = None,
    fixtures: Path | None = None,
    progress: Progress | None = None,
) -> SuiteResult:
    """Build (or reuse) every trace of a suite, record it, and materialise it.

    Raises:
        UsageError: unknown suite, bad seeds, missing fixtures.
        TraceInvalid: a trace failed validation (nothing of it is stored).
        TraceCollision: two traces of the suite share an identifier or secret.
    """
    specs = suite_specs(suite, seeds, fixtures=fixtures)
    items: list[SuiteItem] = []
    metas: dict[str, dict[str, object]] = {}
    for position, item in enumerate(specs, start=1):
        key = item.spec.key()
        entry = store.get_action(key)
        if entry is not None:
            trace_id = str(entry.meta["trace_id"])
            items.append(SuiteItem(trace_id, key, entry.output.digest, entry.output.size, "cached"))
            metas[trace_id] = entry.meta
        else:
            trace, data = _build_one(item, suite)
            meta = _trace_meta(trace, data)
            ref = store.put_blob(data)
            store.record_action(
                key, kind="trace", output=ref, inputs=dict(item.spec.inputs), meta=meta
            )
            items.append(SuiteItem(trace.trace_id, key, ref.digest, ref.size, "built"))
            metas[trace.trace_id] = meta
        if progress:
            progress(position, len(specs), items[-1].trace_id, items[-1].status)
    _check_collisions(suite, metas)
    _check_unique_ids(suite, items)
    tree = store.put_tree(
        {f"{i.trace_id}.json": TreeEntry("blob", i.digest, i.size) for i in items}
    )
    keys = [i.key for i in items]
    store.set_ref(
        f"traces/{suite}", objects=[tree], actions=keys, meta={"seeds": list(seeds or ())}
    )
    store.record_plan(f"traces --suite {suite}", actions=keys, objects=[tree])
    manifest_path = _materialise(store, suite, items, tree, out_dir or resolve_out_path())
    return SuiteResult(suite, tuple(items), tree, str(manifest_path))


def suite_from_items(
    store: Store, suite: str, items: Sequence[SuiteItem], *, out_dir: Path | None = None
) -> SuiteResult:
    """A suite whose traces are already in the store (an external holdout's selection,
    checked against its freeze by `continuity.holdout`): record its tree under the ref
    ``traces/<suite>`` and materialise it like `build_suite` does.

    Raises:
        TraceCollision: two items share a trace id.
        UsageError: ``trace_unknown`` when an item's key has no action entry.
    """
    for item in items:
        if store.get_action(item.key) is None:
            raise UsageError(
                f"the store holds no trace under the key of {item.trace_id}",
                code="trace_unknown",
                location=item.key,
            )
    _check_unique_ids(suite, items)
    tree = store.put_tree(
        {f"{i.trace_id}.json": TreeEntry("blob", i.digest, i.size) for i in items}
    )
    keys = [i.key for i in items]
    store.set_ref(f"traces/{suite}", objects=[tree], actions=keys, meta={"seeds": []})
    store.record_plan(f"traces --suite {suite}", actions=keys, objects=[tree])
    manifest_path = _materialise(store, suite, items, tree, out_dir or resolve_out_path())
    return SuiteResult(suite, tuple(items), tree, str(manifest_path))


def _check_unique_ids(suite: str, items: Iterable[SuiteItem]) -> None:
    seen: set[str] = set()
    for item in items:
        if item.trace_id in seen:
            raise TraceCollision(
                f"two traces of suite {suite} are named {item.trace_id}", location=f"traces/{suite}"
            )
        seen.add(item.trace_id)


def _check_collisions(suite: str, metas: dict[str, dict[str, object]]) -> None:
    owner: dict[str, str] = {}
    for trace_id, meta in metas.items():
        digests = meta.get("value_digests", [])
        assert isinstance(digests, list)
        for value in digests:
            other = owner.setdefault(str(value), trace_id)
            if other != trace_id:
                raise TraceCollision(
                    f"traces {other} and {trace_id} share an identifier or secret",
                    location=f"traces/{suite}",
                )


def _materialise(
    store: Store, suite: str, items: Sequence[SuiteItem], tree: ObjectRef, out_dir: Path
) -> Path:
    folder = suite_dir(out_dir, suite)
    folder.mkdir(parents=True, exist_ok=True)
    wanted = {f"{i.trace_id}.json": i.digest for i in items}
    for name, digest in wanted.items():
        path = folder / name
        if path.is_file() and digest_bytes(path.read_bytes()) == digest:
            continue
        write_output(path, store.get_blob(digest))
    for stale in folder.glob("*.json"):
        if stale.name != "manifest.json" and stale.name not in wanted:
            stale.unlink()
    manifest = Manifest(suite=suite, tree=tree.digest, traces={i.trace_id: i.digest for i in items})
    manifest_path = folder / "manifest.json"
    write_json(manifest_path, manifest)
    return manifest_path


def read_user_trace(path: Path) -> bytes:
    """The bytes of a trace file a user named, reading at most one byte past
    `TRACE_MAX_BYTES` (`continuity.inputs.read_user_bytes`: a device, FIFO or directory
    is refused before any read, and nothing blocks).

    Raises:
        UsageError: ``trace_file_unreadable`` (missing, no permission).
        InputError: ``input_not_a_file`` (a directory, device, FIFO or socket).
        TraceInvalid: ``trace_too_large``, before the rest is read.
    """
    try:
        return read_user_bytes(path, limit=TRACE_MAX_BYTES, what="a trace file")
    except InputError as exc:
        if exc.code != "input_too_large":
            raise
        return read_trace_file(path)  # raises validation's own ``trace_too_large``
    except OSError as exc:
        raise UsageError(
            f"cannot read trace file: {exc.strerror or exc}",
            code="trace_file_unreadable",
            location=str(path),
        ) from None


def store_trace_file(store: Store, path: Path, *, out_dir: Path | None = None) -> SuiteItem:
    """Validate a user-supplied trace file and store it (nothing is stored if invalid).

    Raises:
        UsageError: ``trace_file_unreadable``; ``input_not_a_file`` (an `InputError`).
        TraceInvalid: the trace failed validation (or is over the size limit).
    """
    data = read_user_trace(path)  # at most the size limit is read
    trace = load_trace(data, source=str(path))
    spec = KeySpec(
        kind="trace",
        salt=USER_TRACE_SALT,
        code=code_digest(VALIDATION_CODE),
        params={"family": trace.family, "trace_id": trace.trace_id},
        inputs={"source": digest_bytes(data)},
    )
    key = spec.key()
    ref = store.put_blob(data)
    store.record_action(
        key, kind="trace", output=ref, inputs=dict(spec.inputs), meta=_trace_meta(trace, data)
    )
    store.set_ref(f"traces/file/{trace.trace_id}", objects=[ref], actions=[key])
    folder = (out_dir or resolve_out_path()) / "traces" / "file"
    folder.mkdir(parents=True, exist_ok=True)
    write_output(folder / f"{trace.trace_id}.json", data)
    return SuiteItem(trace.trace_id, key, ref.digest, ref.size, "built")
