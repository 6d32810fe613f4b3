"""The source triple and the files it names: read bounded, hashed, decoded and checked.

A holdout source is ``{manifest path, manifest sha256, statistical spec path}``, all three
or none (`source_from_options`). External-only options (`EXTERNAL_ONLY_OPTIONS`, or the
set a task passes) without the complete triple are refused, and so is a partial triple:
nothing here ever falls back to a built-in suite.

Reading a source (`read_source`) checks, in this order: the manifest's raw bytes hash to
the given sha256; the manifest and the spec decode and are well formed (JSON paths in the
location); every family's group is declared; family ids are unique; every trace path
stays inside the manifest's directory (no absolute path, no ``..``, no symlink that
leaves it). Files are read at most one byte past their limit.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TypeVar

import msgspec

from continuity.errors import HoldoutError, InputError
from continuity.holdout.schema import (
    MANIFEST_SCHEMA,
    SELECTION_ALGORITHM,
    SPEC_SCHEMA,
    HoldoutManifest,
    StatisticalSpec,
)
from continuity.inputs import read_user_bytes
from continuity.traces.schema import TRACE_ID_PATTERN

__all__ = [
    "EXTERNAL_ONLY_OPTIONS",
    "MANIFEST_MAX_BYTES",
    "MANIFEST_OPTION",
    "MANIFEST_SHA256_OPTION",
    "SHA256_PATTERN",
    "SPEC_MAX_BYTES",
    "SPEC_OPTION",
    "HoldoutSource",
    "SourceFiles",
    "read_bounded",
    "read_source",
    "sha256_hex",
    "source_from_options",
    "trace_path",
]

MANIFEST_OPTION = "--manifest"
MANIFEST_SHA256_OPTION = "--manifest-sha256"
SPEC_OPTION = "--statistical-spec"
# The workload options that only mean something for an external source (the seed's list,
# as this project names them); a task passes the subset it takes and the user gave.
EXTERNAL_ONLY_OPTIONS: tuple[str, ...] = (
    "--selection-seed",
    "--per-group",
    "--fixed-budget-sha256",
)
SHA256_PATTERN = re.compile(r"[0-9a-f]{64}")
# A manifest lists one small record per conversation; 4 MiB holds tens of thousands.
MANIFEST_MAX_BYTES = 4 * 1024 * 1024
SPEC_MAX_BYTES = 1024 * 1024
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_MSGSPEC_PATH = re.compile(r" - at `(\$[^`]*)`$")

_T = TypeVar("_T")


@dataclass(frozen=True)
class HoldoutSource:
    """The triple a user names: the manifest, its sha256 and the statistical spec."""

    manifest: Path
    manifest_sha256: str
    spec: Path


def source_from_options(
    manifest: str | None,
    manifest_sha256: str | None,
    statistical_spec: str | None,
    *,
    external: Collection[str] = (),
) -> HoldoutSource | None:
    """The source the options name, or None when none of the triple and no external-only
    option (`external`: the names of those the user gave) is present.

    Raises:
        HoldoutError: ``holdout_source_incomplete`` (a partial triple, or an
            external-only option without the triple; at the first missing option),
            ``holdout_manifest_sha256_invalid`` (not 64 lowercase hex digits).
    """
    given = {
        MANIFEST_OPTION: manifest or "",
        MANIFEST_SHA256_OPTION: manifest_sha256 or "",
        SPEC_OPTION: statistical_spec or "",
    }
    missing = [name for name, value in given.items() if not value.strip()]
    if len(missing) == len(given) and not external:
        return None
    if missing:
        why = (
            f"the external-only options {', '.join(sorted(external))} need a holdout source"
            if len(missing) == len(given)
            else "a holdout source is all three of --manifest, --manifest-sha256 and "
            "--statistical-spec"
        )
        raise HoldoutError(
            f"{why}; missing {', '.join(missing)} (nothing falls back to a built-in suite)",
            code="holdout_source_incomplete",
            location=missing[0],
        )
    digest = given[MANIFEST_SHA256_OPTION].strip()
    if not SHA256_PATTERN.fullmatch(digest):
        raise HoldoutError(
            f"{digest[:80]!r} is not a sha256 (64 lowercase hex digits)",
            code="holdout_manifest_sha256_invalid",
            location=MANIFEST_SHA256_OPTION,
        )
    return HoldoutSource(Path(given[MANIFEST_OPTION]), digest, Path(given[SPEC_OPTION]))


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_bounded(path: Path, limit: int, *, too_large: str) -> bytes:
    """A regular file's bytes, reading at most one byte past `limit`
    (`continuity.inputs.read_user_bytes`: a device, FIFO or directory is refused before
    any read, and nothing blocks).

    Raises:
        HoldoutError: ``holdout_file_unreadable`` (missing, not a regular file, no
            permission), `too_large` (over `limit`).
    """
    try:
        return read_user_bytes(path, limit=limit, what="the file")
    except InputError as exc:
        code = too_large if exc.code == "input_too_large" else "holdout_file_unreadable"
        raise HoldoutError(exc.message, code=code, location=str(path)) from None
    except OSError as exc:
        raise HoldoutError(
            f"cannot read it: {exc.strerror or type(exc).__name__}",
            code="holdout_file_unreadable",
            location=str(path),
        ) from None


def _decode(data: bytes, kind: type[_T], code: str, where: str) -> _T:
    try:
        return msgspec.json.decode(data, type=kind)
    except msgspec.MsgspecError as exc:
        message = str(exc)
        match = _MSGSPEC_PATH.search(message)
        path = match.group(1) if match else "$"
        text = message[: match.start()] if match else message
        raise HoldoutError(text[:240], code=code, location=f"{where}:{path}") from None
    except RecursionError:
        raise HoldoutError("nested too deep", code=code, location=f"{where}:$") from None


def _invalid(code: str, where: str, path: str, message: str) -> HoldoutError:
    return HoldoutError(message, code=code, location=f"{where}:{path}")


def _check_manifest(manifest: HoldoutManifest, where: str) -> None:
    code = "holdout_manifest_invalid"
    if manifest.schema != MANIFEST_SCHEMA:
        raise _invalid(
            code, where, "$.schema", f"schema {manifest.schema[:60]!r}; want {MANIFEST_SCHEMA}"
        )
    if not _NAME.fullmatch(manifest.source):
        raise _invalid(code, where, "$.source", "the source is a short name (letters, digits, ._-)")
    if not manifest.families:
        raise _invalid(code, where, "$.families", "the manifest lists no family")
    seen: set[str] = set()
    for index, family in enumerate(manifest.families):
        at = f"$.families[{index}]"
        if not TRACE_ID_PATTERN.fullmatch(family.family_id):
            raise _invalid(
                code, where, f"{at}.family_id", "a family id is a trace id (3-96 of a-z 0-9 -)"
            )
        if family.family_id in seen:
            raise _invalid(
                code, where, f"{at}.family_id", f"family {family.family_id} is listed twice"
            )
        seen.add(family.family_id)
        if not _NAME.fullmatch(family.group):
            raise _invalid(
                code, where, f"{at}.group", "a group is a short name (letters, digits, ._-)"
            )
        if not SHA256_PATTERN.fullmatch(family.sha256):
            raise _invalid(code, where, f"{at}.sha256", "not a sha256 (64 lowercase hex digits)")
        _relative_trace(family.trace, where, f"{at}.trace")


def _check_spec(spec: StatisticalSpec, manifest: HoldoutManifest, where: str) -> None:
    code = "holdout_spec_invalid"
    if spec.schema != SPEC_SCHEMA:
        raise _invalid(code, where, "$.schema", f"schema {spec.schema[:60]!r}; want {SPEC_SCHEMA}")
    if spec.source != manifest.source:
        raise _invalid(
            code,
            where,
            "$.source",
            f"the spec is for {spec.source[:60]!r}, the manifest for {manifest.source!r}",
        )
    if not spec.groups:
        raise _invalid(code, where, "$.groups", "the spec declares no group")
    names: set[str] = set()
    for index, group in enumerate(spec.groups):
        if not _NAME.fullmatch(group.name) or group.name in names:
            raise _invalid(
                code, where, f"$.groups[{index}].name", "group names are short, unique names"
            )
        names.add(group.name)
    if spec.selection.algorithm != SELECTION_ALGORITHM:
        raise _invalid(code, where, "$.selection.algorithm", f"only {SELECTION_ALGORITHM} is known")
    if spec.selection.per_group < 1:
        raise _invalid(code, where, "$.selection.per_group", "per_group is a positive integer")
    if spec.repeats < 1:
        raise _invalid(code, where, "$.repeats", "repeats is a positive integer")


def _relative_trace(text: str, where: str, path: str) -> PurePosixPath:
    relative = PurePosixPath(text)
    unsafe = "\x00" in text or "\\" in text or relative.is_absolute()
    if unsafe or not relative.parts or ".." in relative.parts:
        raise _invalid(
            "holdout_manifest_invalid",
            where,
            path,
            "a trace path is relative to the manifest's directory, with no '..'",
        )
    return relative


def trace_path(root: Path, text: str, where: str, path: str) -> Path:
    """The trace file `text` names, inside the manifest's directory `root` (resolved,
    so a symlink that leaves the directory is refused).

    Raises:
        HoldoutError: ``holdout_manifest_invalid`` (at `where`:`path`).
    """
    candidate = root.joinpath(*_relative_trace(text, where, path).parts)
    resolved = candidate.resolve()
    if not resolved.is_relative_to(root.resolve()):
        raise _invalid(
            "holdout_manifest_invalid",
            where,
            path,
            "the trace path leaves the manifest's directory",
        )
    return resolved


@dataclass(frozen=True)
class SourceFiles:
    """A source's manifest and spec, hashed, decoded and checked (no trace read yet)."""

    source: HoldoutSource
    root: Path
    manifest: HoldoutManifest
    spec: StatisticalSpec
    spec_sha256: str

    def group_sizes(self) -> dict[str, int]:
        """Families per group, groups in the spec's order."""
        sizes = {group.name: 0 for group in self.spec.groups}
        for family in self.manifest.families:
            sizes[family.group] += 1
        return sizes


def read_source(source: HoldoutSource) -> SourceFiles:
    """Read, hash, decode and check a source's manifest and spec.

    Raises:
        HoldoutError: ``holdout_file_unreadable``, ``holdout_manifest_sha256_mismatch``,
            ``holdout_manifest_invalid``, ``holdout_spec_invalid``,
            ``holdout_group_unknown``.
    """
    where = str(source.manifest)
    data = read_bounded(source.manifest, MANIFEST_MAX_BYTES, too_large="holdout_manifest_invalid")
    actual = sha256_hex(data)
    if actual != source.manifest_sha256:
        raise HoldoutError(
            f"the manifest's sha256 is {actual}, not the {source.manifest_sha256} given",
            code="holdout_manifest_sha256_mismatch",
            location=MANIFEST_SHA256_OPTION,
        )
    manifest = _decode(data, HoldoutManifest, "holdout_manifest_invalid", where)
    _check_manifest(manifest, where)
    spec_where = str(source.spec)
    spec_data = read_bounded(source.spec, SPEC_MAX_BYTES, too_large="holdout_spec_invalid")
    spec = _decode(spec_data, StatisticalSpec, "holdout_spec_invalid", spec_where)
    _check_spec(spec, manifest, spec_where)
    declared = {group.name for group in spec.groups}
    for index, family in enumerate(manifest.families):
        if family.group not in declared:
            raise HoldoutError(
                f"family {family.family_id} is in group {family.group!r}, which the spec does "
                f"not declare ({', '.join(sorted(declared))})",
                code="holdout_group_unknown",
                location=f"{where}:$.families[{index}].group",
            )
    root = source.manifest.absolute().parent
    return SourceFiles(source, root, manifest, spec, sha256_hex(spec_data))
