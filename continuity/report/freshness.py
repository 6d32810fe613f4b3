"""Is a run's aggregate current? A stamp beside its reports answers without reading units.

`doit aggregate` writes ``<run>/aggregate-stamp.json`` after its three outputs: an
`AggregateStamp` holding the **aggregate key** it computed before reading any unit, and
the size and blake3 of each output it wrote. The reports are current when a fresh key
equals the stamp's and every output still has its recorded size and digest.

The key (`aggregate_key`) is a digest over a type-tagged pre-image of everything the
outputs depend on:

- the run directory and the store (both absolute; the drill-down quotes the store's
  traces) and the options that choose how to read it: the scorer
  choice (``--scorer``) and the pricing catalog (``--pricing`` or the default catalog);
- the unit set: every ``units/**/*.json`` file's relative path, size, inode and mtime
  (a unit is rewritten by atomic replace, so a changed unit has a new inode), and the
  same for the run's other top-level JSON files (``run.json``, the run manifest the
  report header shows; ``lookup-slots.json``), never ``results.json`` or the stamp.
  This is a directory listing, never a parse: the per-unit verification and summaries
  stay in `continuity.report.aggregate`;
- the pricing: `continuity.plan.pricing.price_source` (the catalog file's blake3 and
  the installed genai-prices version, the identity a real plan binds too);
- the code: a digest of the source of `AGGREGATE_CODE` (the report package, so a
  renderer change re-renders; the scorer modules in ``continuity.probes``; the unit and
  arm types the aggregate reads) and the installed versions of `SCORER_DATA_PACKAGES`.

The key is computed before the aggregate reads its units, so a unit written while it
runs leaves a stamp whose key no longer matches: the next check re-aggregates.
"""

from __future__ import annotations

import os
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from continuity.digest import code_digest, digest_bytes, value_digest

if TYPE_CHECKING:
    from continuity.report.results import Results
    from continuity.store import Store

__all__ = [
    "AGGREGATE_CODE",
    "SCORER_DATA_PACKAGES",
    "STAMP_NAME",
    "STAMP_SCHEMA",
    "AggregateStamp",
    "OutputStamp",
    "aggregate_key",
    "aggregate_stamped",
    "current_stamp",
    "forget_stamp",
    "read_stamp",
    "write_stamp",
]

STAMP_NAME = "aggregate-stamp.json"
STAMP_SCHEMA = "continuity-aggregate-stamp-v1"
# The code whose change can change an output byte. The report package covers the
# renderer and the statistics; continuity.probes holds every scorer module
# (continuity.report.scores.SCORER_MODULES, checked by a test).
AGGREGATE_CODE = (
    "continuity.arm_catalog",
    "continuity.arms",
    "continuity.plan.price_catalog",
    "continuity.plan.price_db",
    "continuity.plan.pricing",
    "continuity.probes",
    "continuity.report",
    "continuity.runner.manifest",
    "continuity.runner.units.record",
    "continuity.runner.units.build",
    # what the drill-down decodes of each sample's stored reader context
    "continuity.sampling.context",
)
# Third-party data the scorer reads (continuity.report.scores.SCORER_DATA).
SCORER_DATA_PACKAGES = ("wordfreq", "snowballstemmer", "babel")


# Top-level JSON files of a run directory that the aggregate writes, not reads.
_NOT_INPUTS = frozenset({"results.json", STAMP_NAME})


class OutputStamp(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One output file as the aggregate wrote it."""

    size: int
    blake3: str


class AggregateStamp(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What ``aggregate-stamp.json`` holds: the key the outputs were built for, the unit
    count (for the up-to-date line) and each output by name (``results`` ...)."""

    schema: str
    key: str
    units: int
    outputs: dict[str, OutputStamp]
    files: dict[str, str]  # output name -> file name inside the run directory


def _installed(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _listing(
    folder: Path, prefix: str = "", *, recurse: bool = True
) -> list[tuple[str, int, int, int]]:
    """(relative path, size, inode, mtime_ns) of every ``*.json`` file below `folder`
    (only in it, without `recurse`)."""
    rows: list[tuple[str, int, int, int]] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:  # missing or unreadable: the aggregate reports it with its code
        return rows
    for entry in entries:
        name = prefix + entry.name
        if entry.is_dir(follow_symlinks=False):
            if recurse:
                rows += _listing(Path(entry.path), name + "/")
        elif entry.name.endswith(".json"):
            info = entry.stat()
            rows.append((name, info.st_size, info.st_ino, info.st_mtime_ns))
    return sorted(rows)


def aggregate_key(run_dir: Path, scorer: str, catalog: Path, store_root: Path) -> str:
    """The aggregate key of `run_dir` read with `scorer`, priced with `catalog`, against
    the store at `store_root` (the traces the drill-down quotes and the score caches live
    there; see the module doc). Reads directory listings and the catalog file, never a
    unit.

    Raises:
        PricingError: ``pricing_invalid`` when the catalog cannot be read or genai-prices
            is not installed (`continuity.plan.pricing.price_source`).
    """
    from continuity.plan.pricing import price_source

    run_dir = run_dir.absolute()
    return value_digest(
        (
            "continuity-aggregate-key-v1",
            {
                "run_dir": str(run_dir),
                "store": str(store_root.absolute()),
                "scorer": scorer,
                "catalog": str(catalog.absolute()),
                "prices": msgspec.to_builtins(price_source(catalog)),
                "code": code_digest(AGGREGATE_CODE),
                "data": {name: _installed(name) for name in SCORER_DATA_PACKAGES},
                "units": _listing(run_dir / "units"),
                "run_files": [
                    row for row in _listing(run_dir, recurse=False) if row[0] not in _NOT_INPUTS
                ],
            },
        )
    )


def _stamp_of(path: Path) -> OutputStamp | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return OutputStamp(size=len(data), blake3=digest_bytes(data))


def write_stamp(run_dir: Path, key: str, units: int, outputs: dict[str, Path]) -> Path:
    """Record that `outputs` (name -> path inside `run_dir`) were built for `key`.

    Raises:
        OSError: the stamp or an output cannot be read or written.
    """
    from continuity.outputs import write_json

    stamps: dict[str, OutputStamp] = {}
    for name, path in outputs.items():
        stamp = _stamp_of(path)
        if stamp is None:
            raise FileNotFoundError(f"aggregate output {path} is missing")
        stamps[name] = stamp
    record = AggregateStamp(
        schema=STAMP_SCHEMA,
        key=key,
        units=units,
        outputs=stamps,
        files={name: path.name for name, path in outputs.items()},
    )
    target = run_dir / STAMP_NAME
    write_json(target, record)
    return target


def aggregate_stamped(
    store: Store, run_dir: Path, catalog_path: Path, scorer: str = "current"
) -> tuple[Results, dict[str, Path], int]:
    """`continuity.report.aggregate.aggregate_run`, stamped: the key is computed before
    any unit is read and the stamp written after the outputs, so the next `doit
    aggregate` with the same options is up to date. Returns what `aggregate_run` does.

    Raises:
        AggregateError: as `aggregate_run`. PricingError: ``pricing_invalid``.
    """
    from continuity.plan.pricing import load_catalog
    from continuity.report.aggregate import aggregate_run

    key = aggregate_key(run_dir, scorer, catalog_path, store.root)
    forget_stamp(run_dir)
    results, paths, read = aggregate_run(store, run_dir, load_catalog(catalog_path), scorer)
    write_stamp(run_dir, key, results.units, paths)
    return results, paths, read


def forget_stamp(run_dir: Path) -> None:
    """Remove the stamp before re-aggregating: outputs half rewritten never look current."""
    (run_dir / STAMP_NAME).unlink(missing_ok=True)


def read_stamp(run_dir: Path) -> AggregateStamp | None:
    """The run's stamp as written; None when there is none or it does not decode."""
    try:
        stamp = msgspec.json.decode((run_dir / STAMP_NAME).read_bytes(), type=AggregateStamp)
    except (OSError, msgspec.MsgspecError):
        return None
    return stamp if stamp.schema == STAMP_SCHEMA else None


def current_stamp(run_dir: Path, key: str) -> AggregateStamp | None:
    """The run's stamp when its outputs are current for `key`: the stamp's key is `key`
    and every output it names exists with its recorded size and digest. None otherwise
    (no stamp, an unreadable or foreign one, another key, an output missing or changed)."""
    stamp = read_stamp(run_dir)
    if stamp is None or stamp.key != key or set(stamp.outputs) != set(stamp.files):
        return None
    for name, recorded in stamp.outputs.items():
        path = run_dir / stamp.files[name]
        try:
            size = path.stat().st_size
        except OSError:
            return None
        if size != recorded.size or _stamp_of(path) != recorded:
            return None
    return stamp
