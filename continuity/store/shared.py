"""A shared store: a local store as a cache over a `Backend` many machines reach.

Every machine builds into its own local store (`continuity.store.Store`, unchanged: a
unit is still built from a fresh copy of its checkpoint on local disk), and publishes
what it built to the shared backend; another machine fetches what it needs from there
into its own local store. The shared side keeps the local layout.

- **Objects** are immutable and named by their blake3, so publishing one is a
  create-if-absent: idempotent, and two publishers of one object cannot conflict.
  Fetching one verifies the bytes against the name before anything uses them: a
  corrupt shared object is ``object_corrupt`` and never reaches the local store.
- **Action entries** (a unit, a checkpoint, a trace) are published after everything
  they reach, by create-if-absent: the first publisher wins and later ones change
  nothing. A reader therefore sees a whole entry whose output is already shared, or
  nothing: no partial unit and no duplicate is ever visible. Fetching one fetches its
  output first, then writes the entry locally (`Store.adopt_action`).
- **Refs** move by compare and swap (`SharedStore.swap_ref`): the update is computed
  from the ref as read and written only if nobody wrote it meanwhile; else it is read
  and computed again. No update is lost silently.
- **Plans** (`SharedStore.record_plan`): a client pins what one invocation used under
  ``refs/plans/<stamp>-<host>-<pid>``, as a local store does; ``doit gc --shared-store``
  keeps the newest ones' artifacts (`continuity.store.shared_gc`).
"""

from __future__ import annotations

import datetime as dt
import os
import re
import socket
from collections.abc import Callable, Sequence

from continuity.digest import digest_bytes
from continuity.errors import ObjectCorrupt, ObjectMissing
from continuity.store._records import ActionEntry, ObjectRef, Ref, decode_checked, encode_checked
from continuity.store._store import Store, utc_now
from continuity.store.backends import SWAP_ATTEMPTS, Backend, swap

__all__ = ["SWAP_ATTEMPTS", "SharedStore"]


def _object_name(digest: str) -> str:
    return f"objects/{digest[:2]}/{digest}"


def _action_name(key: str) -> str:
    return f"actions/{key[:2]}/{key}.json"


class SharedStore:
    """`local` (this machine's store, the cache) over `backend` (module doc)."""

    def __init__(self, local: Store, backend: Backend) -> None:
        self.local = local
        self.backend = backend
        self._shared: set[str] = set()  # objects known to be in the backend

    # -- publishing ----------------------------------------------------------------------

    def push_object(self, ref: ObjectRef) -> int:
        """Publish `ref` and every object below it; how many were new to the backend.

        Raises:
            ObjectMissing: the local store lacks one of them.
        """
        written = 0
        for digest in self.local.walk(ref):
            if digest in self._shared:
                continue
            written += self.backend.create(_object_name(digest), self.local.get_blob(digest))
            self._shared.add(digest)
        return written

    def push_action(self, key: str) -> bool:
        """Publish action `key` after its output; whether this call published it (False:
        another publisher was first, and its entry stands).

        Raises:
            ObjectMissing: the local store has no verified entry for `key`.
        """
        entry = self.local.get_action(key)
        if entry is None:
            raise ObjectMissing(f"no verified action {key[:16]} in the local store")
        self.push_object(entry.output)
        return self.backend.create(_action_name(key), self.local.action_path(key).read_bytes())

    # -- fetching ------------------------------------------------------------------------

    def pull_object(self, ref: ObjectRef) -> None:
        """Fetch `ref` and everything below it into the local store, each verified.

        Raises:
            ObjectMissing: the backend lacks one of them.
            ObjectCorrupt: one's bytes do not hash to its name.
        """
        if not self.local.has_object(ref.digest):
            name = _object_name(ref.digest)
            found = self.backend.get(name)
            if found is None:
                raise ObjectMissing(
                    f"no object {ref.digest[:16]} in the shared store",
                    location=f"{self.backend.url}/{name}",
                )
            actual = digest_bytes(found[0])
            if actual != ref.digest:  # checked before the local store sees the bytes
                raise ObjectCorrupt(
                    f"shared object {ref.digest[:16]} hashes to {actual[:16]}",
                    location=f"{self.backend.url}/{name}",
                )
            self.local.put_blob(found[0])
        if ref.kind == "tree":
            for entry in self.local.get_tree(ref.digest).entries.values():
                self.pull_object(ObjectRef(entry.kind, entry.digest, entry.size))

    def pull_action(self, key: str) -> ActionEntry | None:
        """Fetch action `key` and its output into the local store (None: not shared).

        Raises:
            ObjectMissing, ObjectCorrupt: its output is missing or corrupt in the
                backend, or the entry itself is corrupt.
        """
        found = self.backend.get(_action_name(key))
        if found is None:
            return None
        try:
            entry: ActionEntry = decode_checked(found[0], ActionEntry)
        except ValueError as exc:
            raise ObjectCorrupt(
                f"shared action {key[:16]} is corrupt: {exc}",
                location=f"{self.backend.url}/{_action_name(key)}",
            ) from None
        self.pull_object(entry.output)
        return self.local.adopt_action(key, found[0])

    # -- refs ----------------------------------------------------------------------------

    def get_ref(self, name: str) -> Ref | None:
        """The shared ref `name` (None: absent).

        Raises:
            ObjectCorrupt: it does not decode.
        """
        found = self.backend.get(f"refs/{name}.json")
        return None if found is None else self._ref(name, found[0])

    def swap_ref(self, name: str, update: Callable[[Ref | None], Ref | None]) -> Ref | None:
        """Set the shared ref `name` to `update(current)` by compare and swap (module
        doc); `update` returning None leaves it as it is. The ref written, or None.

        Raises:
            StoreError: ``store_ref_contended`` after `SWAP_ATTEMPTS` lost rounds.
        """
        self.local.ref_path(name)  # a valid ref name, as locally
        written: list[Ref] = []

        def step(data: bytes | None) -> bytes | None:
            new = update(None if data is None else self._ref(name, data))
            written[:] = [] if new is None else [new]
            return None if new is None else encode_checked(new)

        swap(self.backend, f"refs/{name}.json", step)
        return written[0] if written else None

    def record_plan(
        self, command: str, *, actions: Sequence[str], objects: Sequence[ObjectRef] = ()
    ) -> str:
        """Pin what one invocation used under ``plans/`` (its own new ref: no race);
        the ref's name. Everything it names must be published first."""
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dt%H%M%S%f")
        host = re.sub(r"[^a-z0-9._-]", "-", socket.gethostname().lower())
        name = f"plans/{stamp}-{host}-{os.getpid()}"
        self.local.ref_path(name)  # a valid ref name, as locally
        ref = Ref(name=name, updated_at=utc_now(), objects=list(objects), actions=list(actions),
                  meta={"command": command})  # fmt: skip
        self.backend.create(f"refs/{name}.json", encode_checked(ref))
        return name

    def _ref(self, name: str, data: bytes) -> Ref:
        try:
            ref: Ref = decode_checked(data, Ref)
        except ValueError as exc:
            raise ObjectCorrupt(
                f"shared ref {name} is corrupt: {exc}", location=f"{self.backend.url}/refs"
            ) from None
        return ref
