"""The run manifest (``<run>/run.json``): what a run measured, with what, and when.

A run directory collects the units of every `doit units` invocation that named it (a
user adds a suite, more seeds or another reader to a run), so the manifest keeps one
`Invocation` per call, in order: its plan's choices (mode, suite, arms, repeats, models
and efforts, endpoint kind), the plan digest, the scorer version in force (the digest
that graded the units it ran, continuity.probes.scorer_version), the code commit and
whether the checkout was dirty, and when it started and finished. Run-wide, it holds
the suites and the number of traces the run's unit files cover now. `doit units`
(offline: `continuity.commands.units`; real: `continuity.runner.real.run_real`) and the offline
contract append to it; the report's header, `doit runs` and `doit compare` read it.

It describes invocations, never an input to a key: results.json does not hold it, so the
numbers of two runs of the same plan stay byte-identical. A manifest of the first shape
(``continuity-run-v1``, the last invocation only) reads as one invocation whose scorer
is unknown, and the next write stores it as ``continuity-run-v2``.

A run from the tree a wheel installed records, in place of a commit, the distribution's
version and a digest of its files' RECORD hashes (``0.1.0+<digest>``,
`continuity.installation.InstalledCode`). A run that is neither (a tarball, a copy)
records the commit as ``unknown``; git missing or failing never fails the run.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import os
import subprocess
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, TypeVar

import msgspec

from continuity.errors import AggregateError
from continuity.inputs import DOCUMENT_MAX_BYTES, read_user_bytes
from continuity.installation import CODE_PATHS, installed_code, tree_root
from continuity.outputs import write_output
from continuity.plan.plan import Plan, plan_digest
from continuity.probes.scorer_version import scorer_digest

__all__ = [
    "MANIFEST_NAME",
    "MANIFEST_SCHEMA",
    "MANIFEST_SCHEMA_V1",
    "Invocation",
    "RunManifest",
    "code_revision",
    "invocation",
    "read_run_manifest",
    "revision_label",
    "utc_stamp",
    "write_run_manifest",
]

MANIFEST_NAME = "run.json"
MANIFEST_SCHEMA = "continuity-run-v2"
MANIFEST_SCHEMA_V1 = "continuity-run-v1"  # one invocation, the last; read and converted
_CHECKOUT = tree_root()
_T = TypeVar("_T", bound=Hashable)


class Invocation(msgspec.Struct, frozen=True, kw_only=True):
    """One `doit units` call (or offline contract) that wrote units into the run.
    ``suites`` are the suites it ran (its plan's suite; the contract runs several
    under one plan); ``scorer_digest`` and ``dirty`` are None when unknown."""

    plan_digest: str
    mode: str
    suite: str
    suites: list[str]
    arms: list[str]
    repeats: int
    reader: str
    reader_effort: str
    alternate: str
    judge: str | None
    judge_effort: str | None
    endpoint_kind: str
    scorer_digest: str | None
    commit: str
    dirty: bool | None
    started: str
    finished: str


class RunManifest(msgspec.Struct, frozen=True, kw_only=True):
    """One run's description (see the module doc): every invocation, oldest first."""

    schema: str = MANIFEST_SCHEMA
    run: str
    suites: list[str]  # the suites the run's unit files cover
    traces: int  # distinct traces the run's unit files cover
    invocations: Annotated[list[Invocation], msgspec.Meta(min_length=1)]

    @property
    def latest(self) -> Invocation:
        return self.invocations[-1]

    @property
    def started(self) -> str:
        """When the first invocation started (UTC)."""
        return min(i.started for i in self.invocations)

    @property
    def finished(self) -> str:
        """When the last invocation finished (UTC)."""
        return max(i.finished for i in self.invocations)

    @property
    def dirty(self) -> bool | None:
        """True when any invocation ran from a dirty checkout; None when none did but
        one could not tell."""
        flags = {i.dirty for i in self.invocations}
        return True if True in flags else None if None in flags else False

    def distinct(self, value: Callable[[Invocation], _T]) -> list[_T]:
        """The distinct values of `value` over the invocations, first seen first."""
        return list(dict.fromkeys(value(i) for i in self.invocations))

    def plans(self) -> list[tuple[str, list[str]]]:
        """Each distinct plan digest with the suites its invocations ran, in order."""
        suites: dict[str, dict[str, None]] = {}
        for i in self.invocations:
            suites.setdefault(i.plan_digest, {}).update(dict.fromkeys(i.suites))
        return [(digest, list(names)) for digest, names in suites.items()]


class _ManifestV1(msgspec.Struct, kw_only=True):
    """``continuity-run-v1``: the last invocation's plan and times, flat."""

    schema: str
    run: str
    mode: str
    suite: str
    suites: list[str]
    traces: int
    arms: list[str]
    repeats: int
    reader: str
    reader_effort: str
    alternate: str
    judge: str | None
    judge_effort: str | None
    endpoint_kind: str
    plan_digest: str
    commit: str
    dirty: bool | None
    started: str
    finished: str


class _Schema(msgspec.Struct):
    schema: str = ""


class _UnitHead(msgspec.Struct):
    """The fields of a unit file the manifest counts (the rest is skipped unread)."""

    family: str = ""
    trace_id: str = ""


def utc_stamp() -> str:
    """Now, in UTC, as the manifest writes its times."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _git(checkout: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(checkout), *args],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def code_revision(checkout: Path = _CHECKOUT) -> tuple[str, bool | None]:
    """The commit `checkout` is at and whether its code (`CODE_PATHS`: tracked changes
    and untracked files under them; nothing else in the work tree) differs from it:
    (``unknown``, None) when it is not a git checkout or git cannot say.

    The tree a wheel installed gives its `InstalledCode.label` instead, dirty when a
    file no longer matches the distribution's RECORD hash.

    A tree exported by `doit compare_register` (``git archive`` of a commit; see
    `continuity.roles.register_build`) has no ``.git`` but a ``REVISION`` file naming its
    commit: that commit is returned with dirty False, because the export is no work tree
    and `doit compare_run` re-verifies every one of its files' registered hashes around
    each role it runs.
    """
    revision_file = checkout / "REVISION"
    if not (checkout / ".git").exists() and revision_file.is_file():
        revision = revision_file.read_text(encoding="utf-8", errors="replace").strip()
        if len(revision) == 40 and all(c in "0123456789abcdef" for c in revision):
            return revision, False
    installed = installed_code(checkout)
    if installed is not None:
        return installed.label, bool(installed.modified)
    head = _git(checkout, "rev-parse", "HEAD")
    if head is None or not head.strip():
        return "unknown", None
    status = _git(checkout, "status", "--porcelain", "--untracked-files=all", "--", *CODE_PATHS)
    return head.strip(), None if status is None else bool(status.strip())


def revision_label(checkout: Path = _CHECKOUT) -> str:
    """`code_revision` as one label: the commit, ``+dirty`` when the code differs from
    it (``unknown`` outside git and an installed distribution)."""
    revision, dirty = code_revision(checkout)
    return f"{revision}+dirty" if dirty else revision


def _covered(run_dir: Path) -> tuple[list[str], int]:
    """The suites (trace families) and the number of distinct traces the run's unit
    files cover; a file that does not decode is left to the aggregate to refuse."""
    traces: set[tuple[str, str]] = set()
    for path in (run_dir / "units").rglob("*.json"):
        try:
            head = msgspec.json.decode(path.read_bytes(), type=_UnitHead)
        except (OSError, msgspec.MsgspecError):
            continue
        traces.add((head.family, head.trace_id))
    return sorted({family for family, _ in traces}), len(traces)


def invocation(
    plan: Plan,
    *,
    started: str,
    finished: str | None = None,
    suites: Sequence[str] | None = None,
) -> Invocation:
    """This process's invocation under `plan`: the current commit and scorer version;
    `suites` default to the plan's suite."""
    commit, dirty = code_revision()
    return Invocation(
        plan_digest=plan_digest(plan),
        mode=plan.mode,
        suite=plan.suite,
        suites=list(suites) if suites else [plan.suite],
        arms=list(plan.arms),
        repeats=plan.repeats,
        reader=plan.reader,
        reader_effort=plan.reader_effort,
        alternate=plan.alternate,
        judge=plan.judge,
        judge_effort=plan.judge_effort if plan.judge else None,
        endpoint_kind=plan.endpoint.kind,
        scorer_digest=scorer_digest(),
        commit=commit,
        dirty=dirty,
        started=started,
        finished=finished or utc_stamp(),
    )


def _plan_written(run_dir: Path) -> str:
    """When ``plan.json`` was written (a real run writes it just before its units),
    else now."""
    plan_file = run_dir / "plan.json"
    if not plan_file.is_file():
        return utc_stamp()
    return dt.datetime.fromtimestamp(plan_file.stat().st_mtime, dt.UTC).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )


@contextmanager
def _locked(run_dir: Path) -> Iterator[None]:
    """Hold an exclusive lock on the run directory: two invocations appending to one
    run at once each keep the other's entry."""
    run_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(run_dir, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def write_run_manifest(
    run_dir: Path,
    plan: Plan,
    *,
    started: str | None = None,
    suites: Sequence[str] | None = None,
) -> Path:
    """Append this invocation under `plan` to ``<run_dir>/run.json`` (read, append,
    write atomically, under a lock on the run directory) and return its path. Without
    `started` the invocation's start is when it wrote ``plan.json``, else now; `suites`
    are the suites it ran (default: the plan's).

    Raises:
        AggregateError: ``run_manifest_malformed`` when an existing ``run.json`` is not
            a run manifest (it is left as it is; the units are written and cached).
    """
    started = started or _plan_written(run_dir)
    entry = invocation(plan, started=started, suites=suites)
    path = run_dir / MANIFEST_NAME
    with _locked(run_dir):
        before = read_run_manifest(run_dir)
        covered, traces = _covered(run_dir)
        manifest = RunManifest(
            run=run_dir.name,
            suites=covered,
            traces=traces,
            invocations=[*(before.invocations if before else []), entry],
        )
        write_output(path, msgspec.json.format(msgspec.json.encode(manifest)) + b"\n")
    return path


def _from_v1(old: _ManifestV1) -> RunManifest:
    """A v1 manifest as a v2 one: its one invocation, scorer unknown."""
    fields = {f: getattr(old, f) for f in Invocation.__struct_fields__ if hasattr(old, f)}
    return RunManifest(
        run=old.run,
        suites=old.suites,
        traces=old.traces,
        invocations=[Invocation(**(fields | {"suites": [old.suite], "scorer_digest": None}))],
    )


def read_run_manifest(run_dir: Path) -> RunManifest | None:
    """The run's manifest (a v1 one converted); None when the run has none (runs
    written before manifests).

    Raises:
        AggregateError: ``run_manifest_malformed`` when ``run.json`` exists but is not a
            run manifest (unreadable, not JSON, without invocations, or another schema).
    """
    path = run_dir / MANIFEST_NAME
    try:
        data = read_user_bytes(path, limit=DOCUMENT_MAX_BYTES, what="run.json")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise AggregateError(
            f"cannot read the run manifest: {exc.strerror}",
            code="run_manifest_malformed",
            location=str(path),
        ) from None
    try:
        schema = msgspec.json.decode(data, type=_Schema).schema
        if schema == MANIFEST_SCHEMA_V1:
            return _from_v1(msgspec.json.decode(data, type=_ManifestV1))
        manifest = msgspec.json.decode(data, type=RunManifest)
    except msgspec.MsgspecError as exc:
        raise AggregateError(
            f"not a run manifest: {exc}", code="run_manifest_malformed", location=str(path)
        ) from None
    if manifest.schema != MANIFEST_SCHEMA:
        raise AggregateError(
            f"run manifest schema {manifest.schema!r}; this version reads {MANIFEST_SCHEMA} "
            f"and {MANIFEST_SCHEMA_V1}",
            code="run_manifest_malformed",
            location=str(path),
        )
    return manifest
