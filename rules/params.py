"""Task parameters shared by several task families, their checks and their types.

Every task option is declared with `param` (a typed `Param`, doit's parameter dict). A
task's action receives doit's options as keyword arguments and converts them once into
its command's typed request (`continuity.requests.Request.of`), which it passes to the
command's entry point; a task factory returns a `TaskSpec`.

Numeric and path options carry a checking type (`IntOption`, `FloatOption`,
`SeedsOption`, `DirOption`): doit calls it on the text the user gave (never on a
default) while it parses the command line, before any task is loaded or run. A refusal
raises `ValueError` whose text is the coded line ``<code>: <message> (at --option)``;
doit prints it under its own ``ERROR: Error parsing parameter`` line and exits 3. Empty
values never get this far: `continuity.argv` refuses them before doit's parser runs.

The documented limits: `MAX_REPEATS` repeats and `MAX_PROBE_LIMIT` probes
(`continuity.plan.limits`), `continuity.traces.keys.MAX_SEEDS` seeds, `MAX_JOBS` jobs,
`MAX_CONCURRENCY` concurrent calls.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

from continuity.errors import UsageError
from continuity.plan.limits import MAX_PROBE_LIMIT, MAX_REPEATS

if TYPE_CHECKING:
    from doit.exceptions import TaskFailed
    from doit.task import Task

__all__ = [
    "MAX_CONCURRENCY",
    "MAX_JOBS",
    "MAX_PROBE_LIMIT",
    "MAX_REPEATS",
    "OUT",
    "OUTPUT_CAP",
    "STORE",
    "DirOption",
    "FloatOption",
    "IntOption",
    "NewDirOption",
    "Param",
    "SeedsOption",
    "TaskSpec",
    "Uptodate",
    "check_seeds",
    "param",
]

MAX_JOBS = 256
MAX_CONCURRENCY = 256
_MAX_DIGITS = 18  # int() on thousands of digits is slow; no count here needs more


def _usage_value_error(code: str, message: str, option: str) -> ValueError:
    return ValueError(str(UsageError(message, code=code, location=option)))


class IntOption:
    """An integer from `minimum` to `maximum`, as a doit parameter type."""

    def __init__(
        self, option: str, minimum: int, maximum: int, *, code: str = "option_invalid"
    ) -> None:
        self.option, self.minimum, self.maximum, self.code = option, minimum, maximum, code

    def __repr__(self) -> str:
        return f"<integer {self.minimum} to {self.maximum}>"

    def __call__(self, text: str) -> int:
        stripped = text.strip()
        digits = stripped.removeprefix("-").removeprefix("+")
        if not digits.isascii() or not digits.isdigit() or len(digits) > _MAX_DIGITS:
            raise _usage_value_error(
                self.code,
                f"{text[:40]!r} is not a whole number from {self.minimum} to {self.maximum}",
                self.option,
            )
        value = int(stripped)
        if not self.minimum <= value <= self.maximum:
            raise _usage_value_error(
                self.code, f"{value} is outside {self.minimum} to {self.maximum}", self.option
            )
        return value


class FloatOption:
    """A finite number above `minimum` (or at least it, with ``inclusive``)."""

    def __init__(
        self, option: str, minimum: float, *, inclusive: bool, code: str = "option_invalid"
    ) -> None:
        self.option, self.minimum, self.inclusive, self.code = option, minimum, inclusive, code

    def __repr__(self) -> str:
        return f"<number {'>=' if self.inclusive else '>'} {self.minimum:g}>"

    def __call__(self, text: str) -> float:
        bound = f"{'at least' if self.inclusive else 'above'} {self.minimum:g}"
        try:
            value = float(text) if len(text) <= 64 else math.nan
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise _usage_value_error(
                self.code, f"{text[:40]!r} is not a finite number {bound}", self.option
            )
        if value < self.minimum or (value == self.minimum and not self.inclusive):
            raise _usage_value_error(self.code, f"{value:g} is not {bound}", self.option)
        return value


class SeedsOption:
    """A seed (or repeat) list checked by `continuity.traces.keys.parse_seeds`; the text
    itself is the value (tasks parse it again, cheaply)."""

    def __init__(self, option: str, *, code: str = "seeds_invalid", maximum: int = 0) -> None:
        self.option, self.code, self.maximum = option, code, maximum

    def __repr__(self) -> str:
        return "<seeds, e.g. 101-108>"

    def __call__(self, text: str) -> str:
        check_seeds(text, self.option, code=self.code, maximum=self.maximum)
        return text


def check_seeds(text: str, option: str, *, code: str = "seeds_invalid", maximum: int = 0) -> None:
    """Refuse a seed list `parse_seeds` cannot read, or (``maximum``) a number above it.

    Raises:
        ValueError: the coded line (for doit's parser).
    """
    from continuity.traces.keys import MAX_SEEDS, parse_numbers, parse_seeds

    try:
        if maximum:
            parse_numbers(text, maximum)
        else:
            parse_seeds(text, maximum=MAX_SEEDS)
    except UsageError as exc:
        raise _usage_value_error(code, exc.message, option) from None


class DirOption:
    """A directory the command can use (an existing writable one, or one that can be
    created; the check creates nothing), as a doit parameter type."""

    def __init__(self, option: str, code: str) -> None:
        self.option, self.code = option, code

    def __repr__(self) -> str:
        return "<directory>"

    def __call__(self, text: str) -> str:
        from pathlib import Path

        from continuity.outputs import check_new_directory, usable_directory

        # Checked, never created: a refused command leaves no directory behind (the
        # real-mode guards refuse before anything is written).
        try:
            if text and "\x00" not in text and Path(text).expanduser().exists():
                usable_directory(text, code=self.code, create=False)
            else:
                check_new_directory(text, exists=self.code, invalid=self.code)
        except UsageError as exc:
            raise _usage_value_error(
                exc.code, f"{exc.location}: {exc.message}", self.option
            ) from None
        return text


class NewDirOption:
    """A directory that does not exist yet and can be created (the check creates and
    removes it), as a doit parameter type."""

    def __init__(self, option: str, *, exists: str, invalid: str) -> None:
        self.option, self.exists, self.invalid = option, exists, invalid

    def __repr__(self) -> str:
        return "<new directory>"

    def __call__(self, text: str) -> str:
        from continuity.outputs import check_new_directory

        try:
            check_new_directory(text, exists=self.exists, invalid=self.invalid)
        except UsageError as exc:
            raise _usage_value_error(
                exc.code, f"{exc.location}: {exc.message}", self.option
            ) from None
        return text


T = TypeVar("T")


class Param(TypedDict):
    """A doit task parameter: ``--long`` sets option `name`; doit calls `type` on the
    text given (never on the default)."""

    name: str
    long: str
    type: Callable[[str], object]
    default: object
    help: str


def param(name: str, kind: Callable[[str], T], default: T, text: str) -> Param:
    """A doit task parameter whose long option is `name` with dashes.

    `kind` reads the command-line text (``str``, ``bool`` for a flag, or a checking type
    above); `default` is of the type it returns.
    """
    return {
        "name": name,
        "long": name.replace("_", "-"),
        "type": kind,
        "default": default,
        # doit formats the help with ``% {"default": ...}``: a literal % must be doubled
        # (``60 means 60 %`` crashed ``doit help aggregate``).
        "help": text.replace("%", "%%"),
    }


STORE = param(
    "store",
    DirOption("--store", "store_path_invalid"),
    "",
    "artifact store directory (default: $CONTINUITY_STORE or ./store)",
)
OUT = param(
    "out",
    DirOption("--out", "out_path_invalid"),
    "",
    "output directory (default: $CONTINUITY_OUT or ./out)",
)

# `--max-output-tokens` of a real plan and of `doit calibrate`'s judge: one bound, one code.
OUTPUT_CAP = IntOption("--max-output-tokens", 1, 1_000_000, code="plan_invalid")

# doit's `uptodate` callable: the task (its options) and the values it saved.
Uptodate = Callable[["Task", Mapping[str, object]], bool]


class TaskSpec(TypedDict, total=False):
    """What a ``task_*`` factory returns to doit (the keys these tasks use)."""

    actions: list[Callable[..., TaskFailed | None]]
    params: list[Param]
    uptodate: list[Uptodate]
    verbosity: int
    # {"uptodate_line": options -> str}: what an up-to-date run prints after doit's
    # "-- task" line (`continuity.graph.LocatingReporter`): where the results are.
    meta: dict[str, Callable[[Mapping[str, Any]], str]]
