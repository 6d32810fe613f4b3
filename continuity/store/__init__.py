"""The content-addressed artifact store (objects, action entries, refs) and its gc."""

from continuity.store._gc import GcReport, collect_garbage
from continuity.store._records import ActionEntry, ObjectRef, Ref, Tree, TreeEntry
from continuity.store._store import CorruptionEvent, Store, resolve_store_path, utc_now

__all__ = [
    "ActionEntry",
    "CorruptionEvent",
    "GcReport",
    "ObjectRef",
    "Ref",
    "Store",
    "Tree",
    "TreeEntry",
    "collect_garbage",
    "resolve_store_path",
    "utc_now",
]
