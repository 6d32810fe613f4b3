"""Canonical, type-tagged encoding and the blake3 keys built on it.

Every value that enters a key is first rewritten into a tagged tree (``("S", "1")`` for
the string, ``("I", "1")`` for the integer, ``("F", "0x1.0p+0")`` for the float,
``("B", True)`` for the boolean), dictionaries and sets are sorted by the encoded bytes
of their members, and the tree is serialised with msgpack. Two different kinds of value
therefore never share a pre-image, and dictionary order never matters.

An artifact key is the blake3 of the canonical encoding of
``(kind, version salt, code digest, params, input keys)``: a Merkle graph whose root is
computable before anything runs.
"""

from __future__ import annotations

import enum
import functools
import importlib.util
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import msgspec
from blake3 import blake3

from continuity.errors import DigestInvalid

__all__ = [
    "DIGEST_RE",
    "KeySpec",
    "artifact_key",
    "canonical",
    "check_digest",
    "code_digest",
    "digest_bytes",
    "value_digest",
]

DIGEST_RE = re.compile(r"^[0-9a-f]{64}\Z")  # \Z: a trailing newline is refused
_KEY_DOMAIN = "continuity-artifact-key"
_KEY_VERSION = 1

_encoder = msgspec.msgpack.Encoder()


def _tag(value: Any) -> Any:
    # bool is a subclass of int and an IntEnum is both: test the specific types first.
    if value is None:
        return ("N",)
    if isinstance(value, bool):
        return ("B", value)
    if isinstance(value, enum.Enum):
        return ("E", type(value).__qualname__, _tag(value.value))
    if isinstance(value, int):
        return ("I", str(value))
    if isinstance(value, float):
        return ("F", value.hex())
    if isinstance(value, str):
        return ("S", value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return ("Y", bytes(value))
    if isinstance(value, (list, tuple)):
        return ("L", [_tag(item) for item in value])
    if isinstance(value, Mapping):
        pairs = [(_encoder.encode(_tag(k)), _tag(v)) for k, v in value.items()]
        pairs.sort(key=lambda pair: pair[0])
        return ("D", pairs)
    if isinstance(value, (set, frozenset)):
        return ("T", sorted(_encoder.encode(_tag(item)) for item in value))
    if isinstance(value, msgspec.Struct):
        # An UNSET field is left out, as msgspec leaves it out of an encoding: a field
        # added later as UNSET keeps every earlier value's pre-image.
        fields = {
            name: getattr(value, name)
            for name in value.__struct_fields__
            if getattr(value, name) is not msgspec.UNSET
        }
        return ("R", type(value).__qualname__, _tag(fields))
    raise TypeError(f"{type(value).__name__} cannot enter a key; convert it to a plain value first")


def canonical(value: Any) -> bytes:
    """Return the canonical, type-tagged pre-image of `value`.

    Raises:
        TypeError: for a type with no canonical form (paths, arbitrary objects).
    """
    return _encoder.encode(_tag(value))


def digest_bytes(data: bytes | bytearray | memoryview) -> str:
    """blake3 hex digest of raw bytes (the name of a store object)."""
    return blake3(data).hexdigest()


def value_digest(value: Any) -> str:
    """blake3 hex digest of a value's canonical encoding."""
    return blake3(canonical(value)).hexdigest()


def check_digest(text: str, *, location: str = "-") -> str:
    """Return `text` if it is a 64-hex-digit blake3 digest, else raise `DigestInvalid`."""
    if not DIGEST_RE.match(text):
        raise DigestInvalid(f"not a blake3 hex digest: {text[:80]!r}", location=location)
    return text


class KeySpec(msgspec.Struct, frozen=True, kw_only=True):
    """Everything an artifact's key covers.

    Attributes:
        kind: the artifact family (``"trace"``, ``"checkpoint"`` ...).
        salt: the producing rule's explicit version salt; bump it to force a rebuild.
        code: digest of the source code the artifact depends on (see `code_digest`).
        params: the artifact's own parameters (canonically encodable).
        inputs: role name -> key of each input artifact.
    """

    kind: str
    salt: str
    code: str
    params: Mapping[str, Any] = msgspec.field(default_factory=dict)
    inputs: Mapping[str, str] = msgspec.field(default_factory=dict)

    def key(self) -> str:
        return value_digest(
            (
                _KEY_DOMAIN,
                _KEY_VERSION,
                self.kind,
                self.salt,
                self.code,
                dict(self.params),
                dict(self.inputs),
            )
        )


def artifact_key(
    kind: str,
    *,
    salt: str,
    code: str,
    params: Mapping[str, Any] | None = None,
    inputs: Mapping[str, str] | None = None,
) -> str:
    """Shorthand for ``KeySpec(...).key()``."""
    return KeySpec(kind=kind, salt=salt, code=code, params=params or {}, inputs=inputs or {}).key()


def _module_files(name: str) -> list[tuple[str, Path]]:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(f"no source for module {name!r}")
    origin = Path(spec.origin)
    if spec.submodule_search_locations:  # a package: every .py file below it
        root = origin.parent
        return [
            (f"{name}/{path.relative_to(root).as_posix()}", path)
            for path in sorted(root.rglob("*.py"))
            if "__pycache__" not in path.parts
        ]
    return [(name, origin)]


@functools.cache
def _code_digest(names: tuple[str, ...]) -> str:
    files: dict[str, str] = {}
    for name in names:
        for label, path in _module_files(name):
            files[label] = digest_bytes(path.read_bytes())
    return value_digest(("continuity-code", files))


def code_digest(modules: Iterable[str]) -> str:
    """Digest of the source files of `modules` (a package covers every file below it).

    The result depends on file contents and module-relative names only, never on
    absolute paths, so two checkouts of the same revision agree. Cached per process.
    """
    return _code_digest(tuple(sorted(set(modules))))
