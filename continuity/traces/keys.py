"""Trace artifact keys: salts, seeds and the planned traces of a suite.

Light on imports on purpose: doit's uptodate check for ``doit traces`` runs this on
every invocation, so computing keys and checking the store must not import the
generator or the validator.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import msgspec

from continuity.digest import KeySpec, code_digest, digest_bytes
from continuity.errors import UsageError
from continuity.errors.hints import did_you_mean
from continuity.outputs import resolve_out_path
from continuity.store import Store

__all__ = [
    "DEFAULT_SEEDS",
    "DISTRACTOR_SALT",
    "FIXTURE_SUITES",
    "GENERATOR_CODE",
    "GENERATOR_SALT",
    "MANIFEST_SCHEMA",
    "MAX_SEEDS",
    "MAX_SEED_DIGITS",
    "ORIGINAL_SALT",
    "SMOKE_SALT",
    "SUITES",
    "USER_TRACE_SALT",
    "VALIDATION_CODE",
    "Manifest",
    "PlannedTrace",
    "fixtures_dir",
    "parse_numbers",
    "parse_seeds",
    "resolve_out_path",
    "suite_dir",
    "suite_is_current",
    "suite_specs",
]

SUITES: tuple[str, ...] = ("original", "hard", "hard-distractors", "smoke")
# Suites read from checked-in files (``fixtures/<suite>/*.json``), each trace of the
# suite's own family; the others are generated from seeds. ``smoke`` is one short trace
# for the local-model smoke (a few thousand tokens, so a small CPU model reads it in
# seconds); it is validated like every trace, by its own family's shape.
FIXTURE_SUITES: tuple[str, ...] = ("original", "smoke")
DEFAULT_SEEDS: tuple[int, ...] = tuple(range(101, 109))
# Version salts: bump one to rebuild exactly the artifacts its rule produces.
GENERATOR_SALT = "hard-generator-v1"
DISTRACTOR_SALT = "hard-distractors-v1"
ORIGINAL_SALT = "original-suite-v1"
SMOKE_SALT = "smoke-suite-v1"
USER_TRACE_SALT = "user-trace-v1"
MANIFEST_SCHEMA = "continuity-trace-manifest-v1"
# The documented limits of --seeds (and --repeat, which shares the parser).
MAX_SEEDS = 512
MAX_SEED_DIGITS = 12
_MAX_SEEDS_TEXT = 4096

VALIDATION_CODE = (
    "continuity.traces.schema",
    "continuity.traces.validate",
    "continuity.traces.bounds",
    "continuity.traces.shapes",
    "continuity.traces.tools",
)
GENERATOR_CODE = (
    *VALIDATION_CODE,
    "continuity.traces.generator",
    "continuity.traces.filler",
    "continuity.traces.prng",
    "continuity.traces.scenarios",
)
_SEEDS = re.compile(r"\s*([0-9]{1,12})\s*(?:-\s*([0-9]{1,12})\s*)?", re.ASCII)


def fixtures_dir() -> Path:
    """The checked-in ``fixtures/`` directory next to the package (editable install)."""
    return Path(__file__).resolve().parents[2] / "fixtures"


def parse_seeds(text: str | None, *, maximum: int = MAX_SEEDS) -> tuple[int, ...]:
    """Parse ``"101-124"``, ``"101,105,110-112"`` or ``"103"``; None gives the defaults.

    The count is checked arithmetically, range by range, before any list is built, so
    ``1-99999999999`` is refused at once; a number has at most `MAX_SEED_DIGITS` digits.

    Raises:
        UsageError: ``seeds_invalid`` for anything else, a reversed range or more than
            `maximum` seeds (default `MAX_SEEDS`).
    """
    if text is None or not text.strip():
        return DEFAULT_SEEDS
    if len(text) > _MAX_SEEDS_TEXT:
        raise UsageError(
            f"seeds text is {len(text)} characters; at most {_MAX_SEEDS_TEXT}",
            code="seeds_invalid",
            location="--seeds",
        )
    ranges: list[tuple[int, int]] = []
    count = 0
    for part in text.split(","):
        match = _SEEDS.fullmatch(part)
        if not match:
            raise UsageError(
                f"cannot read seeds {part.strip()!r}; use A-B, A or a comma list of numbers "
                f"of at most {MAX_SEED_DIGITS} digits",
                code="seeds_invalid",
                location="--seeds",
            )
        low = int(match.group(1))
        high = int(match.group(2) or low)
        if high < low:
            raise UsageError(
                f"seed range {low}-{high} is reversed", code="seeds_invalid", location="--seeds"
            )
        count += high - low + 1
        if count > maximum:
            raise UsageError(f"more than {maximum} seeds", code="seeds_invalid", location="--seeds")
        ranges.append((low, high))
    return tuple(dict.fromkeys(seed for low, high in ranges for seed in range(low, high + 1)))


class PlannedTrace(msgspec.Struct, frozen=True):
    """One planned trace: its key spec and how to build it."""

    label: str  # seed or fixture file name, for messages
    spec: KeySpec
    seed: int | None = None
    source: str | None = None  # fixture path for the original suite


def parse_numbers(text: str, maximum: int) -> tuple[int, ...]:
    """`parse_seeds` of `text` (at most `maximum` numbers), each number 1 to `maximum`:
    repeat numbers, for example.

    Raises:
        UsageError: ``seeds_invalid``: `parse_seeds`' refusals, or a number out of range.
    """
    numbers = parse_seeds(text, maximum=maximum)
    if min(numbers) < 1 or max(numbers) > maximum:
        raise UsageError(
            f"{text.strip()!r}: each number must be 1 to {maximum}",
            code="seeds_invalid",
            location="--seeds",
        )
    return numbers


def _fixture_specs(
    suite: str, seeds: Sequence[int] | None, fixtures: Path | None
) -> list[PlannedTrace]:
    """The checked-in traces of a fixture suite, keyed by their bytes and the validator."""
    if seeds:
        raise UsageError(
            f"--seeds applies to the generated suites, not {suite}",
            code="seeds_invalid",
            location="--seeds",
        )
    folder = (fixtures or fixtures_dir()) / suite
    files = sorted(folder.glob("*.json"))
    if not files:
        raise UsageError(
            f"no {suite} traces in {folder}", code="trace_file_unreadable", location=str(folder)
        )
    code = code_digest(VALIDATION_CODE)
    salt = ORIGINAL_SALT if suite == "original" else SMOKE_SALT
    return [
        PlannedTrace(
            path.name,
            KeySpec(
                kind="trace",
                salt=salt,
                code=code,
                params={"family": suite, "file": path.name},
                inputs={"source": digest_bytes(path.read_bytes())},
            ),
            source=str(path),
        )
        for path in files
    ]


def _hard_spec(seed: int) -> KeySpec:
    return KeySpec(
        kind="trace",
        salt=GENERATOR_SALT,
        code=code_digest(GENERATOR_CODE),
        params={"family": "hard", "seed": seed},
    )


def suite_specs(
    suite: str, seeds: Sequence[int] | None = None, *, fixtures: Path | None = None
) -> list[PlannedTrace]:
    """The planned traces of a suite, with keys computable before anything runs."""
    if suite not in SUITES:
        raise UsageError(
            f"unknown suite {suite!r}; {did_you_mean(suite, SUITES)}choose one of "
            f"{', '.join(SUITES)}",
            code="suite_unknown",
            location="--suite",
        )
    if suite in FIXTURE_SUITES:
        return _fixture_specs(suite, seeds, fixtures)
    chosen = tuple(seeds) if seeds else DEFAULT_SEEDS
    if suite == "hard":
        return [PlannedTrace(str(seed), _hard_spec(seed), seed=seed) for seed in chosen]
    return [
        PlannedTrace(
            str(seed),
            KeySpec(
                kind="trace",
                salt=DISTRACTOR_SALT,
                code=code_digest(GENERATOR_CODE),
                params={"family": "hard-distractors", "seed": seed},
                inputs={"hard": _hard_spec(seed).key()},
            ),
            seed=seed,
        )
        for seed in chosen
    ]


class Manifest(msgspec.Struct, frozen=True, kw_only=True):
    schema: str = MANIFEST_SCHEMA
    suite: str
    tree: str
    traces: dict[str, str]  # trace id -> blob digest


def suite_dir(out_dir: Path, suite: str) -> Path:
    return out_dir / "traces" / suite


def suite_is_current(
    store: Store,
    suite: str,
    seeds: Sequence[int] | None = None,
    *,
    out_dir: Path | None = None,
    fixtures: Path | None = None,
) -> bool:
    """Whether building the suite would do nothing: every key has a verified action
    entry and the materialised files match. Reads only the store and ``out/``."""
    try:
        specs = suite_specs(suite, seeds, fixtures=fixtures)
    except UsageError:
        return False  # let the action run and report the error
    folder = suite_dir(out_dir or resolve_out_path(), suite)
    try:
        manifest = msgspec.json.decode((folder / "manifest.json").read_bytes(), type=Manifest)
    except (OSError, msgspec.MsgspecError):
        return False
    expected: dict[str, str] = {}
    for item in specs:
        entry = store.get_action(item.spec.key())
        if entry is None:
            return False
        expected[str(entry.meta.get("trace_id"))] = entry.output.digest
    if manifest.traces != expected or not store.has_object(manifest.tree):
        return False
    for trace_id, digest in expected.items():
        try:
            data = (folder / f"{trace_id}.json").read_bytes()
        except OSError:
            return False
        if digest_bytes(data) != digest:
            return False
    return True
