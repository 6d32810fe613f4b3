"""The file formats of an external holdout source, its overlap report and its freeze.

A source is three things a user names: a **manifest** (one family per conversation: its
id, its group, its trace file relative to the manifest and that file's sha256), the
manifest's sha256, and a **statistical spec** (the groups and the selection parameters).
An importer (``doit import_locomo``) writes the manifest, the traces and the spec; these
tasks read them. Files are UTF-8 JSON as `encode_json` writes them.

What the holdout tasks write: the **overlap report** (``overlap.json``, content-free:
locations, reference names and hashes, never holdout text) and the **freeze record**, a
store object naming every family's trace by its sha256 and store digest, bound to the
tooling and runtime that checked it. A **selection** (`seeded-sha256-rank-v1`) and the
**binding** that plans, policies and registrations carry are typed here too.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from continuity.digest import value_digest

__all__ = [
    "BINDING_SCHEMA",
    "FREEZE_SCHEMA",
    "MANIFEST_SCHEMA",
    "OVERLAP_SCHEMA",
    "SELECTION_ALGORITHM",
    "SPEC_SCHEMA",
    "FreezeRecord",
    "FrozenFamily",
    "GroupSpec",
    "HoldoutBinding",
    "HoldoutManifest",
    "ManifestFamily",
    "Overlap",
    "OverlapCounts",
    "OverlapKind",
    "OverlapReport",
    "ReferenceDigest",
    "RuntimeInfo",
    "SelectedTrace",
    "Selection",
    "SelectionSpec",
    "StatisticalSpec",
    "encode_json",
]

MANIFEST_SCHEMA = "continuity-holdout-manifest-v1"
SPEC_SCHEMA = "continuity-holdout-spec-v1"
SELECTION_ALGORITHM = "seeded-sha256-rank-v1"
OVERLAP_SCHEMA = "continuity-holdout-overlap-v1"
FREEZE_SCHEMA = "continuity-holdout-freeze-v1"
BINDING_SCHEMA = "continuity-holdout-binding-v1"


class _Strict(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    pass


def encode_json(record: msgspec.Struct) -> bytes:
    """The bytes of a holdout file: indented JSON and a final newline."""
    return msgspec.json.format(msgspec.json.encode(record)) + b"\n"


# -- the source (written by an importer) ---------------------------------------------------


class ManifestFamily(_Strict, frozen=True, kw_only=True):
    """One conversation: `family_id` is its trace's ``trace_id``; `trace` is the trace
    file's path relative to the manifest's directory; `sha256` hashes its raw bytes."""

    family_id: str
    group: str
    trace: str
    sha256: str


class HoldoutManifest(_Strict, frozen=True, kw_only=True):
    schema: str = MANIFEST_SCHEMA
    source: str
    description: str = ""
    families: tuple[ManifestFamily, ...]


class GroupSpec(_Strict, frozen=True, kw_only=True):
    name: str
    description: str = ""


class SelectionSpec(_Strict, frozen=True, kw_only=True):
    algorithm: str = SELECTION_ALGORITHM
    per_group: int = 2


class StatisticalSpec(_Strict, frozen=True, kw_only=True):
    """The groups (in selection order) and the selection. `repeats` is the source's own
    transport setting: lookup ignores it and requires exactly one repeat."""

    schema: str = SPEC_SCHEMA
    source: str
    groups: tuple[GroupSpec, ...]
    selection: SelectionSpec = SelectionSpec()
    repeats: int = 1
    note: str = ""


# -- the overlap report --------------------------------------------------------------------

OverlapKind = Literal["value", "id", "phrase"]


class Overlap(_Strict, frozen=True, kw_only=True):
    """One holdout item found in one reference. Content-free: `location` is the item's
    JSON path in its family's trace, `term_sha256` the sha256 of its casefolded tokens
    joined by single spaces, `reference_at` where the first hit sits in the reference
    (a JSON path, or ``line N`` of a module); `hits` counts the reference's hits."""

    kind: OverlapKind
    family_id: str
    location: str
    term_sha256: str
    tokens: int
    reference: str
    reference_at: str
    hits: int


class ReferenceDigest(_Strict, frozen=True, kw_only=True):
    """One named reference: how many texts it holds and the digest of those texts."""

    name: str
    texts: int
    digest: str


class OverlapCounts(_Strict, frozen=True, kw_only=True):
    families: int
    values: int
    distinctive_values: int
    ids: int
    distinctive_ids: int
    phrases: int
    references: int
    reference_texts: int
    reference_tokens: int
    overlaps: int
    by_kind: dict[str, int]


class OverlapReport(_Strict, frozen=True, kw_only=True):
    """``overlap.json``: what was compared and every overlap found. A report whose
    `references_digest` or `rules_digest` is not the current one is stale."""

    schema: str = OVERLAP_SCHEMA
    manifest_sha256: str
    spec_sha256: str
    references_digest: str
    rules_digest: str
    references: tuple[ReferenceDigest, ...]
    counts: OverlapCounts
    overlaps: tuple[Overlap, ...]


# -- the freeze ----------------------------------------------------------------------------


class RuntimeInfo(_Strict, frozen=True, kw_only=True):
    python: str  # implementation and version, e.g. "cpython 3.11.9"
    msgspec: str
    blake3: str


class FrozenFamily(_Strict, frozen=True, kw_only=True):
    """A frozen family: its trace's sha256 (the manifest's), its store blob (blake3),
    size, trace key (an action entry that resolves to the blob) and probe count."""

    family_id: str
    group: str
    trace: str
    sha256: str
    blob: str
    size: int
    key: str
    probes: int


class FreezeRecord(_Strict, frozen=True, kw_only=True):
    """A frozen source, stored as a content-addressed object (its digest is the freeze
    digest). No timestamp: freezing the same source twice gives the same bytes."""

    schema: str = FREEZE_SCHEMA
    source: str
    manifest_sha256: str
    spec_sha256: str
    spec: StatisticalSpec
    overlap_references_digest: str
    overlap_rules_digest: str
    families: tuple[FrozenFamily, ...]
    tooling_digest: str
    runtime: RuntimeInfo
    runtime_digest: str


# -- selection and binding -----------------------------------------------------------------


class Selection(_Strict, frozen=True, kw_only=True):
    """A `seeded-sha256-rank-v1` selection: the selected family ids (groups in the
    spec's order, each group's in rank order), the same per group, and the sealed
    spares (sorted by id)."""

    algorithm: str
    seed: int
    per_group: int
    selected: tuple[str, ...]
    by_group: tuple[tuple[str, tuple[str, ...]], ...]
    spares: tuple[str, ...]

    @property
    def selection_digest(self) -> str:
        """blake3 of the selection's canonical encoding."""
        return value_digest(("continuity-holdout-selection", self))


class HoldoutBinding(_Strict, frozen=True, kw_only=True):
    """What plans, policies and registrations bind of a holdout: the source, its freeze
    and the selection."""

    schema: str = BINDING_SCHEMA
    manifest_sha256: str
    spec_sha256: str
    freeze_digest: str
    algorithm: str
    seed: int
    per_group: int
    selected: tuple[str, ...]
    selection_digest: str


class SelectedTrace(_Strict, frozen=True, kw_only=True):
    """A selected family's trace in the store: `digest` is the blob (blake3), `key` the
    trace key whose action entry resolves to it."""

    family_id: str
    group: str
    trace_id: str
    digest: str
    size: int
    sha256: str
    key: str
