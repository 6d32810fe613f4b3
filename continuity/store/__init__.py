"""The content-addressed artifact store (objects, action entries, refs), its gc and its scrub."""

from continuity.store._gc import GcReport, check_limits, collect_garbage
from continuity.store._records import ActionEntry, ObjectRef, Ref, Tree, TreeEntry
from continuity.store._store import CorruptionEvent, Store, resolve_store_path, utc_now
from continuity.store._verify import (
    KindCount,
    RefRebuilder,
    RefRepair,
    VerifyFinding,
    VerifyReport,
    verify_store,
)
from continuity.store.backends import (
    Backend,
    FileStat,
    LocalBackend,
    S3Backend,
    open_backend,
    swap,
)
from continuity.store.shared import SharedStore
from continuity.store.shared_gc import collect_shared_garbage
from continuity.store.shared_verify import verify_shared

__all__ = [
    "ActionEntry",
    "Backend",
    "CorruptionEvent",
    "FileStat",
    "GcReport",
    "KindCount",
    "LocalBackend",
    "ObjectRef",
    "Ref",
    "RefRebuilder",
    "RefRepair",
    "S3Backend",
    "SharedStore",
    "Store",
    "Tree",
    "TreeEntry",
    "VerifyFinding",
    "VerifyReport",
    "check_limits",
    "collect_garbage",
    "collect_shared_garbage",
    "open_backend",
    "resolve_store_path",
    "swap",
    "utc_now",
    "verify_shared",
    "verify_store",
]
