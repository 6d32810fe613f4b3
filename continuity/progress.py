"""Progress for long commands: a rich bar on a terminal, plain lines elsewhere (CI)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["Tick", "progress"]

Tick = Callable[[int, int, str, str], None]


@contextmanager
def progress(label: str, *, force_plain: bool = False) -> Iterator[Tick]:
    """Yield ``tick(done, total, item, status)``.

    On a TTY this drives a rich progress bar with done/total, the current item and an
    ETA; otherwise (CI, pipes, tests) it prints one plain line per item.
    """
    if sys.stdout.isatty() and not force_plain:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        with Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[item]}"),
            TimeRemainingColumn(),
            transient=False,
        ) as bar:
            task_id = bar.add_task(label, total=None, item="")

            def tick_bar(done: int, total: int, item: str, status: str) -> None:
                bar.update(task_id, completed=done, total=total, item=f"{item} ({status})")

            yield tick_bar
        return

    started = time.monotonic()

    def tick_plain(done: int, total: int, item: str, status: str) -> None:
        elapsed = time.monotonic() - started
        print(f"{label} [{done}/{total}] {item} {status} ({elapsed:.1f}s)", flush=True)

    yield tick_plain
