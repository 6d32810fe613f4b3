"""Progress for long commands: a rich bar on a terminal, plain lines elsewhere (CI).

A command of several stages (the offline contract) opens `stages` once: on a terminal
that is one live display with an overall bar (stages finished of all, elapsed time)
and, below it, a bar for each stage that is running, two when two run at once (the
contract's outside-agent pass runs beside its units). Every `progress` opened inside it
joins that display; outside it, `progress` makes a display of its own. Off a terminal
each tick is one plain line, ``<stage> [done/total] <item> <status> (<elapsed>s)``, and
a stage's start under `stages` is announced as ``[k/N] <stage>``; lines from two
threads never interleave.

Bars and columns take the terminal's width (``$COLUMNS`` first, then the terminal's),
and an item too long for its column is cut with an ellipsis, never wrapped.
"""

from __future__ import annotations

import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

__all__ = ["Tick", "progress", "stages"]

Tick = Callable[[int, int, str, str], None]

_LOCK = threading.Lock()  # one plain line at a time; one change to `_Overall` at a time


class _Overall:
    """The open `stages` display: its bar, and how many stages have started/finished."""

    def __init__(self, label: str, total: int, bar: Progress | None) -> None:
        self.label, self.total, self.bar = label, total, bar
        self.started = self.finished = 0
        self.task: TaskID | None = (
            bar.add_task(label, total=total, item="") if bar is not None else None
        )

    def start(self, stage: str) -> None:
        with _LOCK:
            self.started += 1
            self.total = max(self.total, self.started)
            if self.bar is None:
                print(f"[{self.started}/{self.total}] {stage}", flush=True)

    def finish(self) -> None:
        with _LOCK:
            self.finished += 1
            if self.bar is not None and self.task is not None:
                self.bar.update(self.task, completed=self.finished, total=self.total)


_OVERALL: _Overall | None = None


def _width() -> int:
    return shutil.get_terminal_size((100, 24)).columns


def _bar(*, overall: bool) -> Progress:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    width = _width()
    return Progress(
        TextColumn("[bold]{task.description}", table_column=None),
        BarColumn(bar_width=max(10, width // 5)),
        MofNCompleteColumn(),
        TimeElapsedColumn() if overall else TimeRemainingColumn(),
        TextColumn("{task.fields[item]}", style="dim"),
        console=Console(file=sys.stdout, width=width, soft_wrap=False),
        transient=False,
        expand=False,
    )


def _fit(text: str) -> str:
    """An item cut to what is left of the line beside the bar (ellipsis when cut)."""
    room = max(12, _width() // 2 - 4)
    return text if len(text) <= room else text[: room - 1] + "…"


@contextmanager
def stages(label: str, total: int, *, force_plain: bool = False) -> Iterator[None]:
    """One overall display for a command of about `total` stages (module doc); every
    `progress` opened inside (in any thread) joins it."""
    global _OVERALL
    if _OVERALL is not None:  # nested: the outer display already counts
        yield
        return
    plain = force_plain or not sys.stdout.isatty()
    bar = None if plain else _bar(overall=True)
    _OVERALL = _Overall(label, total, bar)
    try:
        if bar is None:
            yield
        else:
            with bar:
                yield
    finally:
        _OVERALL = None


@contextmanager
def progress(label: str, *, force_plain: bool = False) -> Iterator[Tick]:
    """Yield ``tick(done, total, item, status)`` (module doc: a bar, or plain lines)."""
    overall = _OVERALL
    if overall is not None:
        overall.start(label)
    try:
        if overall is not None and overall.bar is not None and not force_plain:
            task = overall.bar.add_task(label, total=None, item="")
            try:
                yield _bar_tick(overall.bar, task)
            finally:
                overall.bar.remove_task(task)  # the overall bar counts it now
        elif overall is None and sys.stdout.isatty() and not force_plain:
            with _bar(overall=False) as bar:
                yield _bar_tick(bar, bar.add_task(label, total=None, item=""))
        else:
            yield _plain_tick(label)
    finally:
        if overall is not None:
            overall.finish()


def _bar_tick(bar: Progress, task: TaskID) -> Tick:
    def tick_bar(done: int, total: int, item: str, status: str) -> None:
        bar.update(task, completed=done, total=total, item=_fit(f"{item} ({status})"))

    return tick_bar


def _plain_tick(label: str) -> Tick:
    started = time.monotonic()

    def tick_plain(done: int, total: int, item: str, status: str) -> None:
        elapsed = time.monotonic() - started
        line = f"{label} [{done}/{total}] {item} {status} ({elapsed:.1f}s)\n"
        with _LOCK:
            sys.stdout.write(line)
            sys.stdout.flush()

    return tick_plain
