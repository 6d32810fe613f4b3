"""`doit holdout_validate`: a source whose every file and trace checks out.

On top of `read_source` (the manifest's sha256, the manifest and spec well formed, groups
declared, ids unique, trace paths inside the manifest's directory): every group holds at
least the spec's ``per_group`` families; every trace file exists, hashes to the sha256
the manifest gives, and validates (`continuity.traces.validate.load_trace`) as a trace of
family ``imported`` whose ``trace_id`` is its family id. Nothing is written.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from continuity.errors import HoldoutError, Issue, TraceInvalid
from continuity.holdout.schema import ManifestFamily
from continuity.holdout.source import (
    HoldoutSource,
    SourceFiles,
    read_bounded,
    read_source,
    sha256_hex,
    trace_path,
)
from continuity.traces.schema import TRACE_MAX_BYTES, Trace
from continuity.traces.validate import load_trace

__all__ = [
    "ValidatedFamily",
    "ValidatedSource",
    "check_group_sizes",
    "read_family",
    "validate_source",
]


@dataclass(frozen=True)
class ValidatedFamily:
    """A family whose trace file hashed to its sha256 and validated."""

    family: ManifestFamily
    data: bytes
    trace: Trace


@dataclass(frozen=True)
class ValidatedSource:
    files: SourceFiles
    families: tuple[ValidatedFamily, ...]

    @property
    def probes(self) -> int:
        return sum(len(f.trace.probes) for f in self.families)

    def categories(self) -> dict[str, int]:
        """Probes per category, most frequent first."""
        counts = Counter(p.category for f in self.families for p in f.trace.probes)
        return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))

    def summary(self) -> str:
        """Families per group, traces and probes, in a few lines."""
        sizes = self.files.group_sizes()
        groups = ", ".join(f"{name} {count}" for name, count in sizes.items())
        categories = ", ".join(f"{name} {count}" for name, count in self.categories().items())
        manifest = self.files.manifest
        return (
            f"holdout source {manifest.source}: {len(self.families)} families in "
            f"{len(sizes)} groups ({groups}); per_group {self.files.spec.selection.per_group}\n"
            f"traces: {len(self.families)} ({sum(len(f.data) for f in self.families):,} bytes); "
            f"probes: {self.probes} ({categories})\n"
            f"manifest sha256 {self.files.source.manifest_sha256}, spec sha256 "
            f"{self.files.spec_sha256}"
        )


def check_group_sizes(files: SourceFiles, per_group: int) -> None:
    """Every group holds at least `per_group` families.

    Raises:
        HoldoutError: ``holdout_group_too_small`` (at the spec's group).
    """
    for index, (name, size) in enumerate(files.group_sizes().items()):
        if size < per_group:
            raise HoldoutError(
                f"group {name} holds {size} families; the selection takes {per_group} per group",
                code="holdout_group_too_small",
                location=f"{files.source.spec}:$.groups[{index}]",
            )


def read_family(files: SourceFiles, index: int) -> tuple[ManifestFamily, bytes]:
    """A family's trace bytes, read from inside the manifest's directory and checked
    against the manifest's sha256.

    Raises:
        HoldoutError: ``holdout_manifest_invalid`` (a path leaving the directory),
            ``holdout_file_unreadable``, ``holdout_trace_invalid`` (over the trace size
            limit), ``holdout_trace_hash_mismatch``.
    """
    family = files.manifest.families[index]
    where, at = str(files.source.manifest), f"$.families[{index}].trace"
    path = trace_path(files.root, family.trace, where, at)
    data = read_bounded(path, TRACE_MAX_BYTES, too_large="holdout_trace_invalid")
    actual = sha256_hex(data)
    if actual != family.sha256:
        raise HoldoutError(
            f"the trace of {family.family_id} hashes to {actual}, not the manifest's "
            f"{family.sha256}",
            code="holdout_trace_hash_mismatch",
            location=str(path),
        )
    return family, data


def _trace(family: ManifestFamily, data: bytes, location: str) -> Trace:
    try:
        trace = load_trace(data, source=location)
    except TraceInvalid as exc:
        raise HoldoutError(
            f"the trace of {family.family_id} is not a valid trace: {exc.issues[0]}",
            code="holdout_trace_invalid",
            location=location,
            issues=exc.issues,
        ) from None
    problems = []
    if trace.family != "imported":
        problems.append(
            Issue("holdout_trace_invalid", "$.family", f"family {trace.family!r}, not imported")
        )
    if trace.trace_id != family.family_id:
        problems.append(
            Issue(
                "holdout_trace_invalid",
                "$.trace_id",
                f"trace id {trace.trace_id!r}, not {family.family_id!r}",
            )
        )
    if problems:
        raise HoldoutError(
            f"the trace of {family.family_id} is not this family's imported trace: "
            f"{problems[0].message}",
            code="holdout_trace_invalid",
            location=f"{location}:{problems[0].location}",
            issues=problems,
        )
    return trace


def validate_source(source: HoldoutSource) -> ValidatedSource:
    """Check a source completely (see the module doc); nothing is written.

    Raises:
        HoldoutError: every ``holdout_*`` code of `read_source` and `read_family`,
            ``holdout_group_too_small``, ``holdout_trace_invalid`` (carrying the
            validator's issues).
    """
    files = read_source(source)
    check_group_sizes(files, files.spec.selection.per_group)
    families = []
    for index in range(len(files.manifest.families)):
        family, data = read_family(files, index)
        families.append(ValidatedFamily(family, data, _trace(family, data, family.trace)))
    return ValidatedSource(files, tuple(families))
