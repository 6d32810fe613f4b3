"""The typed records the store keeps on disk, and their self-checking file encoding."""

from __future__ import annotations

from typing import Any, Literal

import msgspec
from blake3 import blake3

__all__ = [
    "TREE_SCHEMA",
    "ActionEntry",
    "ObjectKind",
    "ObjectRef",
    "Ref",
    "Tree",
    "TreeEntry",
    "decode_checked",
    "encode_checked",
]

ObjectKind = Literal["blob", "tree"]
TREE_SCHEMA = "continuity-tree-v1"


class ObjectRef(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A pointer to an object: whether it is a blob or a tree, its digest and size."""

    kind: ObjectKind
    digest: str
    size: int


class TreeEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    kind: ObjectKind
    digest: str
    size: int
    executable: bool = False


class Tree(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A directory: entry name -> object. Names are single path components."""

    schema: str
    entries: dict[str, TreeEntry]


class ActionEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """An artifact key mapped to its output, like a DVC run-cache or Bazel action entry."""

    schema_version: int = 1
    key: str
    kind: str
    output: ObjectRef
    created_at: str
    inputs: dict[str, str] = msgspec.field(default_factory=dict)
    meta: dict[str, Any] = msgspec.field(default_factory=dict)


class Ref(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A human name that pins objects and action entries against `gc`."""

    schema_version: int = 1
    name: str
    updated_at: str
    objects: list[ObjectRef] = msgspec.field(default_factory=list)
    actions: list[str] = msgspec.field(default_factory=list)
    meta: dict[str, Any] = msgspec.field(default_factory=dict)


def encode_checked(record: msgspec.Struct) -> bytes:
    """JSON body, a newline, then the blake3 of the body: a torn or edited file fails."""
    body = msgspec.json.encode(record)
    return body + b"\n" + blake3(body).hexdigest().encode("ascii") + b"\n"


def decode_checked(data: bytes, type_: type[Any]) -> Any:
    """Inverse of `encode_checked`. Raises ValueError on any mismatch."""
    body, sep, tail = data.rstrip(b"\n").rpartition(b"\n")
    if not sep or blake3(body).hexdigest().encode("ascii") != tail:
        raise ValueError("checksum mismatch")
    try:
        return msgspec.json.decode(body, type=type_)
    except msgspec.MsgspecError as exc:
        raise ValueError(str(exc)) from exc
