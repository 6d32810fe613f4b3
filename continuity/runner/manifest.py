"""The run manifest (``<run>/run.json``): what a run measured, with what, and when.

`doit units` writes it beside ``units/`` (offline: rules/units.py; real:
`continuity.runner.real.run_real`), and the report's header and `doit runs` read it.
It holds the plan's choices (suite, arms, repeats, models and efforts, endpoint kind),
the plan digest, the traces the run's units cover, the code commit and whether the
checkout was dirty, and when the invocation started and finished. It is a description
of an invocation, never an input to a key: results.json does not hold it, so the
numbers of two runs of the same plan stay byte-identical.

A run that is not a git checkout (an installed package, a tarball) records the commit
as ``unknown``; git missing or failing never fails the run.
"""

from __future__ import annotations

import datetime as dt
import subprocess
from pathlib import Path

import msgspec

from continuity.errors import AggregateError
from continuity.outputs import write_output
from continuity.plan.plan import Plan, plan_digest

__all__ = [
    "MANIFEST_NAME",
    "MANIFEST_SCHEMA",
    "RunManifest",
    "code_revision",
    "read_run_manifest",
    "run_manifest",
    "utc_stamp",
    "write_run_manifest",
]

MANIFEST_NAME = "run.json"
MANIFEST_SCHEMA = "continuity-run-v1"
_CHECKOUT = Path(__file__).resolve().parents[2]


class RunManifest(msgspec.Struct, frozen=True, kw_only=True):
    """One run's description (see the module doc). ``dirty`` is None when unknown."""

    schema: str = MANIFEST_SCHEMA
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
    """The commit `checkout` is at and whether its work tree differs from it:
    (``unknown``, None) when it is not a git checkout or git cannot say."""
    head = _git(checkout, "rev-parse", "HEAD")
    if head is None or not head.strip():
        return "unknown", None
    status = _git(checkout, "status", "--porcelain", "--untracked-files=no")
    return head.strip(), None if status is None else bool(status.strip())


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


def run_manifest(
    run_dir: Path, plan: Plan, *, started: str, finished: str | None = None
) -> RunManifest:
    """The manifest of the run in `run_dir` under `plan` (its units as they are now)."""
    suites, traces = _covered(run_dir)
    commit, dirty = code_revision()
    return RunManifest(
        run=run_dir.name,
        mode=plan.mode,
        suite=plan.suite,
        suites=suites,
        traces=traces,
        arms=list(plan.arms),
        repeats=plan.repeats,
        reader=plan.reader,
        reader_effort=plan.reader_effort,
        alternate=plan.alternate,
        judge=plan.judge,
        judge_effort=plan.judge_effort if plan.judge else None,
        endpoint_kind=plan.endpoint.kind,
        plan_digest=plan_digest(plan),
        commit=commit,
        dirty=dirty,
        started=started,
        finished=finished or utc_stamp(),
    )


def write_run_manifest(run_dir: Path, plan: Plan, *, started: str | None = None) -> Path:
    """Write ``<run_dir>/run.json`` atomically and return its path. Without `started`
    the invocation's start is when it wrote ``plan.json`` (a real run writes it just
    before its units), else now."""
    if started is None:
        plan_file = run_dir / "plan.json"
        started = (
            dt.datetime.fromtimestamp(plan_file.stat().st_mtime, dt.UTC).strftime(
                "%Y-%m-%dT%H:%M:%SZ"
            )
            if plan_file.is_file()
            else utc_stamp()
        )
    manifest = run_manifest(run_dir, plan, started=started)
    path = run_dir / MANIFEST_NAME
    write_output(path, msgspec.json.format(msgspec.json.encode(manifest)) + b"\n")
    return path


def read_run_manifest(run_dir: Path) -> RunManifest | None:
    """The run's manifest; None when the run has none (runs written before manifests,
    or by the offline contract, which runs its units without `doit units`).

    Raises:
        AggregateError: ``run_manifest_malformed`` when ``run.json`` exists but is not a
            run manifest (unreadable, not JSON, or another schema).
    """
    path = run_dir / MANIFEST_NAME
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise AggregateError(
            f"cannot read the run manifest: {exc.strerror}",
            code="run_manifest_malformed",
            location=str(path),
        ) from None
    try:
        manifest = msgspec.json.decode(data, type=RunManifest)
    except msgspec.MsgspecError as exc:
        raise AggregateError(
            f"not a run manifest: {exc}", code="run_manifest_malformed", location=str(path)
        ) from None
    if manifest.schema != MANIFEST_SCHEMA:
        raise AggregateError(
            f"run manifest schema {manifest.schema!r}; this version reads {MANIFEST_SCHEMA}",
            code="run_manifest_malformed",
            location=str(path),
        )
    return manifest
