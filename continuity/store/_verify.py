"""Scrub the store: read every object, action entry and ref, check each, quarantine the bad.

A read already verifies what it touches; `verify_store` reads what nobody touches. Each
kind has its own check:

- **object** ``objects/ab/<digest>``: the blake3 of its bytes is its name, and it lives in
  the ``ab`` fan-out folder of that name;
- **action** ``actions/ab/<key>.json``: the self-check (`decode_checked`) holds, the entry
  decodes as an `ActionEntry`, and names the key its file is named after;
- **ref** ``refs/<name>.json``: the self-check holds and the ref names itself.

A file failing its check is moved to ``quarantine/`` (never deleted) and counted. With
``repair=True`` the scrub then makes what the refs need whole again:

1. action entries whose output (or anything below it) is now missing are quarantined
   too, so every build sees a plain miss and rebuilds them;
2. every ref that lost anything (or was itself quarantined) is handed to the
   `RefRebuilder` registered for its kind (the part of its name before the first ``/``,
   e.g. ``traces`` or ``checkpoints``), kinds in the order they are registered; a ref
   is ``rebuilt`` when it is whole afterwards. A ref quarantined earlier (by a read, or a
   ``doit verify`` without ``--repair``) and not written since counts as lost too:
   quarantine keeps a ref's name in the file name (``refs~traces~original.json.<pid>.<time>``);
3. a ref no rebuilder can make whole is listed with the command that rebuilds it.
   ``plans/...`` refs are history (they only root `gc`): what they lost is rebuilt by the
   next run of the command they name and never fails a repair.

The store knows nothing of what its refs mean: the rebuilders come from the caller
(`continuity.commands.store_upkeep` for ``doit verify``), which may import the layers that
build them.

Units, checkpoints, scores and aggregate caches are keyed by what they were made from, so
the next ``doit units`` / ``doit aggregate`` with the same options rebuilds exactly what the
repair quarantined, and skips the rest.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Literal, Protocol, TypeVar

import msgspec
from blake3 import blake3

from continuity.digest import DIGEST_RE
from continuity.errors import ContinuityError, ObjectMissing, RecordCorrupt
from continuity.store._records import ActionEntry, ObjectRef, Ref, decode_checked
from continuity.store._store import Store

__all__ = [
    "KINDS",
    "VERIFY_SCHEMA",
    "Kind",
    "KindCount",
    "RefRebuilder",
    "RefRepair",
    "VerifyFinding",
    "VerifyReport",
    "object_problem",
    "verify_store",
]

VERIFY_SCHEMA = "continuity-verify-v1"
Kind = Literal["object", "action", "ref"]
KINDS: tuple[Kind, ...] = ("object", "action", "ref")
_R = TypeVar("_R", ActionEntry, Ref)


class KindCount(msgspec.Struct, kw_only=True):
    """Files of one kind: how many were read, failed their check, and were moved aside."""

    checked: int = 0
    corrupt: int = 0
    quarantined: int = 0


class RefRebuilder(Protocol):
    """Rebuilds one kind of ref from its sources, as the command that wrote it would.

    Called with the store, the ref's name, the ref as last read (None when the ref file
    itself was lost) and the folder to materialise outputs in. Returns a short note on what
    it rebuilt, or None when it cannot rebuild this ref (e.g. a trace read from a file it
    does not have). May raise a `ContinuityError`; the repair reports it as unrepaired.
    """

    def __call__(
        self, store: Store, name: str, ref: Ref | None, out_dir: Path | None
    ) -> str | None: ...


class VerifyFinding(msgspec.Struct, frozen=True, kw_only=True):
    """One file moved to quarantine: why, and where it went (``-``: another process
    moved it first)."""

    kind: Kind
    path: str
    problem: str
    quarantined_to: str


class RefRepair(msgspec.Struct, frozen=True, kw_only=True):
    """What ``--repair`` did about one ref that lost something.

    ``status``: ``rebuilt`` (whole again), ``next-run`` (a plan; its command rebuilds what
    it lost), or ``unrepaired`` (``hint`` names the command that rebuilds it)."""

    name: str
    status: Literal["rebuilt", "next-run", "unrepaired"]
    hint: str


class VerifyReport(msgspec.Struct, kw_only=True):
    """The result of one scrub, written as JSON by ``doit verify``."""

    schema: str = VERIFY_SCHEMA
    store: str
    repair: bool
    counts: dict[str, KindCount]
    findings: list[VerifyFinding]
    orphaned_actions: list[str] = msgspec.field(default_factory=list)
    refs: list[RefRepair] = msgspec.field(default_factory=list)

    @property
    def corrupt(self) -> int:
        return sum(c.corrupt for c in self.counts.values())

    @property
    def unrepaired(self) -> list[RefRepair]:
        return [r for r in self.refs if r.status == "unrepaired"]

    def summary(self) -> str:
        checked = sum(c.checked for c in self.counts.values())
        parts = ", ".join(
            f"{self.counts[k].checked} {k}s ({self.counts[k].corrupt} corrupt, "
            f"{self.counts[k].quarantined} quarantined)"
            for k in KINDS
        )
        text = f"verify: {checked} files checked: {parts}"
        if self.repair:
            rebuilt = sum(r.status == "rebuilt" for r in self.refs)
            text += (
                f"; repair quarantined {len(self.orphaned_actions)} action entries whose "
                f"output was gone, rebuilt {rebuilt} refs, {len(self.unrepaired)} unrepaired"
            )
        return text


def verify_store(
    store: Store,
    *,
    repair: bool = False,
    rebuild: Mapping[str, RefRebuilder] | None = None,
    out_dir: Path | None = None,
) -> VerifyReport:
    """Check every object, action entry and ref of `store`; quarantine what fails.

    With `repair`, `rebuild` maps a ref kind (``traces``, ``checkpoints``, ...) to the
    `RefRebuilder` that makes such refs whole again, tried in the mapping's order; a kind
    without one is listed as unrepaired. `out_dir` is where rebuilders materialise what
    they rebuild (as the command that wrote the ref would). Never raises for bad data:
    the report says what was found and done.
    """
    report = VerifyReport(
        store=str(store.root),
        repair=repair,
        counts={kind: KindCount() for kind in KINDS},
        findings=[],
    )
    damaged_refs: set[str] = set()
    for kind, path, problem in _scan(store):
        count = report.counts[kind]
        count.checked += 1
        if problem is None:
            continue
        count.corrupt += 1
        event = store.quarantine(path, path.name, problem, warn=False)
        if event.quarantined_to != "-":
            count.quarantined += 1
        report.findings.append(
            VerifyFinding(
                kind=kind, path=str(path), problem=problem, quarantined_to=event.quarantined_to
            )
        )
        if kind == "ref":
            damaged_refs.add(_ref_name(store, path))
    if repair:
        report.orphaned_actions = _quarantine_orphans(store)
        report.refs = _repair_refs(store, damaged_refs, rebuild or {}, out_dir)
    return report


def _scan(store: Store) -> Iterator[tuple[Kind, Path, str | None]]:
    for path in store.iter_objects():
        yield "object", path, object_problem(path)
    for path in store.iter_actions():
        yield "action", path, _action_problem(path)
    for path in sorted(store.refs_dir.rglob("*.json")):
        yield "ref", path, _ref_problem(store, path)


def object_problem(path: Path) -> str | None:
    """Why object file `path` fails its check (None: it verifies, or it is gone)."""
    name = path.name
    if not DIGEST_RE.fullmatch(name) or path.parent.name != name[:2]:
        return "misplaced (not objects/<ab>/<digest>)"
    hasher = blake3()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                hasher.update(block)
    except FileNotFoundError:
        return None  # removed by gc or a concurrent read's quarantine
    actual = hasher.hexdigest()
    return None if actual == name else f"hashes to {actual}"


def _read_checked(path: Path, type_: type[_R]) -> _R | str:
    """The decoded record, or why it failed (``gone`` when the file disappeared)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return "gone"
    try:
        record: _R = decode_checked(data, type_)
    except ValueError as exc:
        return f"undecodable ({exc})"
    return record


def _action_problem(path: Path) -> str | None:
    key = path.name.removesuffix(".json")
    if (
        not DIGEST_RE.fullmatch(key)
        or path.parent.name != key[:2]
        or not path.name.endswith(".json")
    ):
        return "misplaced (not actions/<ab>/<key>.json)"
    entry = _read_checked(path, ActionEntry)
    if entry == "gone":
        return None
    if isinstance(entry, str):
        return entry
    return None if entry.key == key else f"names key {entry.key}"


def _ref_name(store: Store, path: Path) -> str:
    return path.relative_to(store.refs_dir).as_posix().removesuffix(".json")


def _ref_problem(store: Store, path: Path) -> str | None:
    ref = _read_checked(path, Ref)
    if ref == "gone":
        return None
    if isinstance(ref, str):
        return ref
    name = _ref_name(store, path)
    return None if ref.name == name else f"names ref {ref.name}"


def _whole(store: Store, ref: ObjectRef) -> bool:
    try:
        return store.verify_ref(ref)
    except ObjectMissing:  # a tree that no longer decodes
        return False


def _quarantine_orphans(store: Store) -> list[str]:
    """Move aside action entries whose output is no longer whole; return their keys."""
    orphans = []
    for path in store.iter_actions():
        key = path.name.removesuffix(".json")
        entry = store.get_action(key, verify_output=False)
        if entry is None or _whole(store, entry.output):
            continue
        event = store.quarantine(path, key, "output missing", warn=False)
        if event.quarantined_to != "-":
            orphans.append(key)
    return orphans


def _ref_is_whole(store: Store, ref: Ref) -> bool:
    return all(_whole(store, obj) for obj in ref.objects) and all(
        store.get_action(key) is not None for key in ref.actions
    )


def _lost_refs(store: Store) -> set[str]:
    """Refs (plans aside) quarantined by an earlier read or scrub and never written again."""
    if not store.quarantine_dir.is_dir():
        return set()
    lost = set()
    for path in store.quarantine_dir.glob("refs~*"):
        name = path.name.removeprefix("refs~").rpartition(".json.")[0].replace("~", "/")
        if name and not name.startswith("plans/") and not store.ref_path(name).exists():
            lost.add(name)
    return lost


def _repair_refs(
    store: Store, damaged: set[str], rebuild: Mapping[str, RefRebuilder], out_dir: Path | None
) -> list[RefRepair]:
    refs: dict[str, Ref | None] = dict.fromkeys(damaged | _lost_refs(store))
    for name in store.list_refs():
        try:
            ref = store.get_ref(name)
        except RecordCorrupt:  # went bad after the scan: quarantined by the read
            refs[name] = None
            continue
        if ref is not None and not _ref_is_whole(store, ref):
            refs[name] = ref
    order = {kind: position for position, kind in enumerate(rebuild)}

    def rank(name: str) -> tuple[int, str]:  # registered kinds first, in their order
        return order.get(name.partition("/")[0], len(order)), name

    done = {
        name: _repair_ref(store, name, refs[name], rebuild, out_dir)
        for name in sorted(refs, key=rank)
    }
    return [done[name] for name in sorted(done)]


def _hint(head: str, rest: str) -> str:
    """The command that rebuilds a ref no rebuilder could make whole."""
    if head == "traces" and rest.startswith("file/"):
        return f"run `doit traces --file <the {rest.removeprefix('file/')} trace file>`"
    hints = {
        "traces": f"run `doit traces --suite {rest}`",
        "checkpoints": f"run `doit checkpoints --suite {rest}` with the seeds you used",
        "confirmed": "run the confirmed real plan's `doit units --real` again",
        "lookup": "run `doit lookup_budget` again",
    }
    return hints.get(head, "rerun the command that wrote it")


def _repair_ref(
    store: Store,
    name: str,
    ref: Ref | None,
    rebuild: Mapping[str, RefRebuilder],
    out_dir: Path | None,
) -> RefRepair:
    head, _, rest = name.partition("/")
    if head == "plans":
        command = str(ref.meta.get("command", "")) if ref is not None else ""
        hint = f"the next `doit {command}` rebuilds what it lost" if command else "history only"
        return RefRepair(name=name, status="next-run", hint=hint)
    hint = _hint(head, rest)
    rebuilder = rebuild.get(head)
    if rebuilder is None:
        return RefRepair(name=name, status="unrepaired", hint=hint)
    try:
        done = rebuilder(store, name, ref, out_dir)
    except ContinuityError as exc:
        return RefRepair(name=name, status="unrepaired", hint=f"{exc}; {hint}")
    if done is None:
        return RefRepair(name=name, status="unrepaired", hint=hint)
    try:
        rebuilt = store.get_ref(name)
    except RecordCorrupt:
        rebuilt = None
    if rebuilt is None or not _ref_is_whole(store, rebuilt):
        return RefRepair(name=name, status="unrepaired", hint=f"still incomplete; {hint}")
    return RefRepair(name=name, status="rebuilt", hint=done)
