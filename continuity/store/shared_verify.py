"""``doit verify --shared-store URL``: scrub a shared store as `verify_store` scrubs a
local one.

Every object must hash to its name; every action entry must decode (its checksum
line), name the key it is filed under, and reach only objects the store holds whole;
every ref must decode and name only action entries the store holds. A file that fails
is moved aside, under ``quarantine/<name>.<stamp>`` in the same backend (written there
first, then deleted from its place): a reader then finds it missing and the next
publisher writes it again, as a local store quarantines a corrupt file. An action entry
whose output is gone is reported as orphaned, not moved (its entry is whole). The report
is the local scrub's `VerifyReport`, its ``store`` the backend's URL.
"""

from __future__ import annotations

import datetime as dt

import msgspec

from continuity.digest import digest_bytes
from continuity.store._records import ActionEntry, ObjectRef, Ref, Tree, decode_checked
from continuity.store._verify import KINDS, Kind, KindCount, VerifyFinding, VerifyReport
from continuity.store.backends import Backend

__all__ = ["verify_shared"]

_PREFIXES: tuple[tuple[Kind, str], ...] = (
    ("object", "objects/"),
    ("action", "actions/"),
    ("ref", "refs/"),
)


def _quarantine(backend: Backend, name: str, data: bytes) -> str:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%f")
    target = f"quarantine/{name}.{stamp}"
    backend.create(target, data)
    backend.delete(name)
    return target


def _reachable(backend: Backend, ref: ObjectRef, whole: set[str]) -> bool:
    """Whether `ref` and everything below it are objects the scrub found whole."""
    if ref.digest not in whole:
        return False
    if ref.kind == "blob":
        return True
    found = backend.get(f"objects/{ref.digest[:2]}/{ref.digest}")
    if found is None:
        return False
    try:
        tree = msgspec.json.decode(found[0], type=Tree)
    except msgspec.MsgspecError:
        return False
    return all(
        _reachable(backend, ObjectRef(e.kind, e.digest, e.size), whole)
        for e in tree.entries.values()
    )


def _problem(kind: Kind, name: str, data: bytes) -> str | None:
    """What is wrong with file `name` of `kind` (None: nothing)."""
    leaf = name.rsplit("/", 1)[1]
    if kind == "object":
        actual = digest_bytes(data)
        return None if actual == leaf else f"hashes to {actual}"
    try:
        record = decode_checked(data, ActionEntry if kind == "action" else Ref)
    except ValueError as exc:
        return f"undecodable ({exc})"
    if isinstance(record, ActionEntry) and record.key != leaf.removesuffix(".json"):
        return f"entry names key {record.key}"
    return None


def verify_shared(backend: Backend) -> VerifyReport:
    """Scrub the shared store on `backend` (module doc). Never raises for bad data."""
    report = VerifyReport(
        store=backend.url, repair=False, counts={k: KindCount() for k in KINDS}, findings=[]
    )
    whole: set[str] = set()
    entries: dict[str, ActionEntry] = {}
    for kind, prefix in _PREFIXES:
        for name in backend.names(prefix):
            found = backend.get(name)
            if found is None:  # removed since it was listed
                continue
            count = report.counts[kind]
            count.checked += 1
            problem = _problem(kind, name, found[0])
            if problem is None:
                leaf = name.rsplit("/", 1)[1]
                if kind == "object":
                    whole.add(leaf)
                elif kind == "action":
                    entries[leaf.removesuffix(".json")] = decode_checked(found[0], ActionEntry)
                continue
            count.corrupt += 1
            target = _quarantine(backend, name, found[0])
            count.quarantined += 1
            report.findings.append(
                VerifyFinding(kind=kind, path=name, problem=problem, quarantined_to=target)
            )
    report.orphaned_actions = sorted(
        key for key, entry in entries.items() if not _reachable(backend, entry.output, whole)
    )
    return report
