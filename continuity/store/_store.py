"""The content-addressed store: objects (blobs, trees), action entries and refs.

Layout under the store root::

    objects/ab/<digest>      immutable bytes whose blake3 is <digest>
    actions/ab/<key>.json    artifact key -> output object (+ metadata), self-checking
    refs/<name>.json         human names pinning objects and actions, self-checking
    tmp/                     temp files; every write goes here first
    quarantine/              corrupt files, moved aside when a read detects them

Every write goes to a temp file in ``tmp/``, is fsynced, then moved into place with
``os.replace`` (and the directory fsynced), so a reader sees either nothing or the whole
file. Two processes writing the same key write identical content and the last replace
wins. Every read is verified; a corrupt object is reported (a warning, the
`corruption_events` list) and moved to ``quarantine/``, then treated as missing.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import re
import stat
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from continuity.digest import check_digest, digest_bytes
from continuity.errors import ObjectCorrupt, ObjectMissing, RecordCorrupt, StoreError, UsageError
from continuity.store._records import (
    TREE_SCHEMA,
    ActionEntry,
    ObjectRef,
    Ref,
    Tree,
    TreeEntry,
    decode_checked,
    encode_checked,
)

__all__ = ["STORE_ENV", "CorruptionEvent", "Store", "log", "resolve_store_path", "utc_now"]

log = logging.getLogger("continuity.store")

STORE_ENV = "CONTINUITY_STORE"
_REF_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*(/[a-z0-9][a-z0-9._-]*)*\Z")
# A file name: no slash, no control character (C0, DEL, C1), the whole string (a trailing
# newline would otherwise pass `$`).
_TREE_NAME = re.compile(r"[^/\x00-\x1f\x7f-\x9f]+")


def _check_tree_name(name: str) -> None:
    """Refuse a tree entry name that is not one plain file name.

    Raises:
        StoreError: ``tree_entry_invalid``.
    """
    if not _TREE_NAME.fullmatch(name) or name in (".", ".."):
        raise StoreError(f"invalid tree entry name {name!r}", code="tree_entry_invalid")


def utc_now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def resolve_store_path(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The store root: `explicit`, else ``$CONTINUITY_STORE``, else ``./store``."""
    chosen = explicit or os.environ.get(STORE_ENV) or "store"
    return Path(chosen).expanduser().absolute()


class CorruptionEvent(msgspec.Struct, frozen=True):
    """A read that found bytes not matching their name; the file was quarantined."""

    path: str
    expected: str
    actual: str
    quarantined_to: str


class Store:
    """A content-addressed store rooted at `root` (created on first use)."""

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self.root = resolve_store_path(root)
        if self.root.exists() and not self.root.is_dir():
            raise UsageError(
                "store path exists and is not a directory",
                code="store_path_invalid",
                location=str(self.root),
            )
        self.objects_dir = self.root / "objects"
        self.actions_dir = self.root / "actions"
        self.refs_dir = self.root / "refs"
        self.tmp_dir = self.root / "tmp"
        self.quarantine_dir = self.root / "quarantine"
        try:
            for path in (self.objects_dir, self.actions_dir, self.refs_dir, self.tmp_dir):
                path.mkdir(parents=True, exist_ok=True)
        except (OSError, ValueError) as exc:  # /proc/nope, /dev/null/x, a NUL byte
            raise UsageError(
                f"cannot use it as the store directory: {getattr(exc, 'strerror', None) or exc}",
                code="store_path_invalid",
                location=str(self.root),
            ) from None
        self.corruption_events: list[CorruptionEvent] = []

    def __repr__(self) -> str:
        return f"Store({str(self.root)!r})"

    # -- low-level file protocol -------------------------------------------------------

    def _atomic_write(self, path: Path, data: bytes, *, mode: int = 0o644) -> None:
        fd, tmp_name = tempfile.mkstemp(dir=self.tmp_dir, prefix=path.name[:40] + ".")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fchmod(handle.fileno(), mode)
                os.fsync(handle.fileno())
            path.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp_name, path)
        except BaseException:  # cleanup only (an interrupt too), re-raised as it was
            with _suppress_missing():
                os.unlink(tmp_name)
            raise
        _fsync_dir(path.parent)

    def _quarantine(self, path: Path, expected: str, actual: str) -> None:
        self.quarantine(path, expected, actual)

    def quarantine(
        self, path: Path, expected: str, actual: str, *, warn: bool = True
    ) -> CorruptionEvent:
        """Move `path` aside into ``quarantine/`` (never delete it) and record the event.

        `expected`/`actual` describe the mismatch; the event's ``quarantined_to`` is ``-``
        when another process moved the file first."""
        self.quarantine_dir.mkdir(parents=True, exist_ok=True)
        label = path.name
        if path.is_relative_to(self.refs_dir):  # keep the ref's name: `doit verify --repair`
            label = "refs~" + path.relative_to(self.refs_dir).as_posix().replace("/", "~")
        target = self.quarantine_dir / f"{label}.{os.getpid()}.{utc_now()}"
        try:
            os.replace(path, target)
        except FileNotFoundError:  # another reader moved it first
            target = Path("-")
        event = CorruptionEvent(str(path), expected, actual, str(target))
        self.corruption_events.append(event)
        if warn:
            log.warning(
                "store: corrupt file %s (expected %s, found %s); quarantined to %s and "
                "treated as missing",
                path,
                expected[:16],
                actual[:16],
                target,
            )
        return event

    # -- objects -------------------------------------------------------------------------

    def object_path(self, digest: str) -> Path:
        check_digest(digest)
        return self.objects_dir / digest[:2] / digest

    def put_blob(self, data: bytes) -> ObjectRef:
        """Store `data` (idempotent) and return its reference."""
        digest = digest_bytes(data)
        path = self.object_path(digest)
        if not self._object_ok(path, digest):
            self._atomic_write(path, data, mode=0o444)
        return ObjectRef("blob", digest, len(data))

    def _object_ok(self, path: Path, digest: str) -> bool:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return False
        actual = digest_bytes(data)
        if actual != digest:
            self._quarantine(path, digest, actual)
            return False
        return True

    def get_blob(self, digest: str) -> bytes:
        """The verified bytes of object `digest`.

        Raises:
            ObjectMissing: no such object.
            ObjectCorrupt: the bytes did not verify (reported and quarantined).
        """
        path = self.object_path(digest)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise ObjectMissing(f"no object {digest}", location=str(path)) from None
        actual = digest_bytes(data)
        if actual != digest:
            self._quarantine(path, digest, actual)
            raise ObjectCorrupt(
                f"object {digest} hashes to {actual}; treated as missing", location=str(path)
            )
        return data

    def has_object(self, ref: ObjectRef | str, *, verify: bool = True) -> bool:
        """Whether the object exists (and, by default, verifies)."""
        digest = ref if isinstance(ref, str) else ref.digest
        path = self.object_path(digest)
        if not verify:
            return path.is_file()
        return self._object_ok(path, digest)

    def put_tree(self, entries: Mapping[str, TreeEntry]) -> ObjectRef:
        for name in entries:
            _check_tree_name(name)
        tree = Tree(TREE_SCHEMA, dict(sorted(entries.items())))
        ref = self.put_blob(msgspec.json.encode(tree))
        return ObjectRef("tree", ref.digest, ref.size)

    def get_tree(self, digest: str) -> Tree:
        data = self.get_blob(digest)
        try:
            tree = msgspec.json.decode(data, type=Tree)
        except msgspec.MsgspecError as exc:
            raise ObjectCorrupt(f"object {digest} is not a tree: {exc}") from exc
        if tree.schema != TREE_SCHEMA:
            raise ObjectCorrupt(f"object {digest} has tree schema {tree.schema!r}")
        return tree

    def put_dir(self, path: str | os.PathLike[str]) -> ObjectRef:
        """Store a directory as a tree of blobs (regular files and directories only)."""
        base = Path(path)
        entries: dict[str, TreeEntry] = {}
        for child in sorted(base.iterdir()):
            info = child.lstat()
            if stat.S_ISDIR(info.st_mode):
                sub = self.put_dir(child)
                entries[child.name] = TreeEntry("tree", sub.digest, sub.size)
            elif stat.S_ISREG(info.st_mode):
                blob = self.put_blob(child.read_bytes())
                executable = bool(info.st_mode & stat.S_IXUSR)
                entries[child.name] = TreeEntry("blob", blob.digest, blob.size, executable)
            else:
                raise StoreError(
                    "only regular files and directories can be stored in a tree",
                    code="tree_entry_invalid",
                    location=str(child),
                )
        return self.put_tree(entries)

    def restore_tree(self, digest: str, dest: str | os.PathLike[str]) -> None:
        """Write tree `digest` into `dest` (created; must not exist or be empty)."""
        target = Path(dest)
        target.mkdir(parents=True, exist_ok=True)
        if any(target.iterdir()):
            raise StoreError(
                "restore target is not empty", code="restore_target_not_empty", location=str(target)
            )
        for name, entry in self.get_tree(digest).entries.items():
            _check_tree_name(name)  # a tree object not written by put_tree
            if entry.kind == "tree":
                self.restore_tree(entry.digest, target / name)
            else:
                path = target / name
                path.write_bytes(self.get_blob(entry.digest))
                if entry.executable:
                    path.chmod(0o755)

    def iter_objects(self) -> Iterator[Path]:
        for fan in sorted(self.objects_dir.iterdir()):
            if fan.is_dir():
                yield from sorted(fan.iterdir())

    def walk(self, ref: ObjectRef) -> Iterator[str]:
        """Every object digest reachable from `ref`, itself included."""
        yield ref.digest
        if ref.kind == "tree":
            for entry in self.get_tree(ref.digest).entries.values():
                yield from self.walk(ObjectRef(entry.kind, entry.digest, entry.size))

    # -- action entries -----------------------------------------------------------------

    def action_path(self, key: str) -> Path:
        check_digest(key)
        return self.actions_dir / key[:2] / f"{key}.json"

    def record_action(
        self,
        key: str,
        *,
        kind: str,
        output: ObjectRef,
        inputs: Mapping[str, str] | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> ActionEntry:
        """Map artifact `key` to `output`. The output must already be stored."""
        if not self.has_object(output):
            raise ObjectMissing(
                f"refusing to record action {key[:16]}: its output is not stored",
                location=str(self.object_path(output.digest)),
            )
        entry = ActionEntry(
            key=key,
            kind=kind,
            output=output,
            created_at=utc_now(),
            inputs=dict(inputs or {}),
            meta=dict(meta or {}),
        )
        self._atomic_write(self.action_path(key), encode_checked(entry))
        return entry

    def get_action(self, key: str, *, verify_output: bool = True) -> ActionEntry | None:
        """The action entry for `key`, or None when it is missing, corrupt, or (by
        default) its output object is missing or corrupt. Never raises for bad data."""
        path = self.action_path(key)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        try:
            entry: ActionEntry = decode_checked(data, ActionEntry)
            if entry.key != key:
                raise ValueError(f"entry names key {entry.key}")
        except ValueError as exc:
            self._quarantine(path, key, f"undecodable ({exc})")
            return None
        if verify_output and not self.verify_ref(entry.output):
            return None
        return entry

    def adopt_action(self, key: str, data: bytes) -> ActionEntry:
        """Write an action entry file another store wrote (`data`, its bytes exactly),
        once it decodes, names `key` and its output is here and verifies.

        Raises:
            ObjectCorrupt: `data` is not an action entry for `key`.
            ObjectMissing: its output is not stored here.
        """
        try:
            entry: ActionEntry = decode_checked(data, ActionEntry)
        except ValueError as exc:
            raise ObjectCorrupt(f"action {key[:16]} is corrupt: {exc}") from None
        if entry.key != key:
            raise ObjectCorrupt(f"action {key[:16]} names key {entry.key[:16]}")
        if not self.verify_ref(entry.output):
            raise ObjectMissing(f"action {key[:16]}: its output is not stored")
        self._atomic_write(self.action_path(key), data)
        return entry

    def verify_ref(self, ref: ObjectRef) -> bool:
        """Whether `ref` and everything below it exist and verify."""
        if ref.kind == "blob":
            return self.has_object(ref)
        try:
            tree = self.get_tree(ref.digest)
        except ObjectMissing:
            return False
        return all(
            self.verify_ref(ObjectRef(entry.kind, entry.digest, entry.size))
            for entry in tree.entries.values()
        )

    def load_output(self, key: str) -> bytes | None:
        """The verified output blob of action `key`, or None if it must be rebuilt."""
        entry = self.get_action(key, verify_output=False)
        if entry is None or entry.output.kind != "blob":
            return None
        try:
            return self.get_blob(entry.output.digest)
        except ObjectMissing:
            return None

    def iter_actions(self) -> Iterator[Path]:
        for fan in sorted(self.actions_dir.iterdir()):
            if fan.is_dir():
                yield from sorted(fan.iterdir())

    # -- refs ------------------------------------------------------------------------------

    def ref_path(self, name: str) -> Path:
        if not _REF_NAME.match(name):
            raise UsageError(f"invalid ref name {name!r}", code="ref_name_invalid")
        return self.refs_dir / f"{name}.json"

    def set_ref(
        self,
        name: str,
        *,
        objects: Sequence[ObjectRef] = (),
        actions: Sequence[str] = (),
        meta: Mapping[str, Any] | None = None,
    ) -> Ref:
        for key in actions:
            check_digest(key, location=f"ref {name}")
        ref = Ref(
            name=name,
            updated_at=utc_now(),
            objects=list(objects),
            actions=list(actions),
            meta=dict(meta or {}),
        )
        self._atomic_write(self.ref_path(name), encode_checked(ref))
        return ref

    def get_ref(self, name: str) -> Ref | None:
        path = self.ref_path(name)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        try:
            ref: Ref = decode_checked(data, Ref)
        except ValueError as exc:
            self._quarantine(path, name, f"undecodable ({exc})")
            raise RecordCorrupt(f"ref {name} is corrupt: {exc}", location=str(path)) from exc
        return ref

    def delete_ref(self, name: str) -> None:
        with _suppress_missing():
            self.ref_path(name).unlink()

    def list_refs(self, prefix: str = "") -> list[str]:
        names = []
        for path in self.refs_dir.rglob("*.json"):
            name = path.relative_to(self.refs_dir).as_posix()[: -len(".json")]
            if name.startswith(prefix):
                names.append(name)
        return sorted(names)

    def record_plan(
        self, command: str, *, actions: Sequence[str], objects: Sequence[ObjectRef] = ()
    ) -> Ref:
        """Pin what one command invocation used, under ``plans/``; `gc` keeps recent ones."""
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dt%H%M%S%f")
        name = f"plans/{stamp}-{os.getpid()}"
        return self.set_ref(name, objects=objects, actions=actions, meta={"command": command})


class _suppress_missing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: object, exc: object, tb: object) -> bool:
        return isinstance(exc, FileNotFoundError)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
