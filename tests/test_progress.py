"""Progress output: plain lines off a terminal (CI), a rich bar on one."""

from __future__ import annotations

import io
import os
import pty
import re
import subprocess
import sys
import threading
from typing import Any

import pytest

from continuity.progress import progress, stages


def test_plain_lines_when_not_a_tty(capsys: Any) -> None:
    with progress("units original") as tick:
        tick(1, 3, "r1 brightline-return native", "built")
        tick(3, 3, "r1 brightline-return cold-rebuild", "cached")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("units original [1/3] r1 brightline-return native built (")
    assert lines[1].startswith("units original [3/3] r1 brightline-return cold-rebuild cached")


def test_a_rich_bar_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    screen = Terminal()
    monkeypatch.setattr(sys, "stdout", screen)
    with progress("units hard") as tick:
        tick(2, 9, "r1 gen-grant-101 ceiling", "built")
    output = screen.getvalue()
    assert "units hard" in output and "2/9" in output and "gen-grant-101 ceiling" in output


def test_stages_announce_each_stage_with_its_place_off_a_terminal(capsys: Any) -> None:
    with stages("offline contract", 2):
        with progress("traces original") as tick:
            tick(1, 1, "brightline-return", "built")
        with progress("units original") as tick:
            tick(1, 1, "r1 brightline-return native", "built")
        with progress("an unplanned third"):
            pass
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "[1/2] traces original"
    assert lines[1].startswith("traces original [1/1] brightline-return built (")
    assert lines[2] == "[2/2] units original"
    assert lines[4] == "[3/3] an unplanned third"  # the total grows, never shows 3/2


def test_lines_from_two_threads_never_interleave(capsys: Any) -> None:
    def ticks(label: str) -> None:
        with progress(label) as tick:
            for i in range(300):
                tick(i, 300, "item " * 20, "built")

    threads = [threading.Thread(target=ticks, args=(f"stage {n}",)) for n in range(2)]
    with stages("two at once", 2):
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    lines = capsys.readouterr().out.splitlines()
    ticked = [line for line in lines if not line.startswith("[")]
    assert len(ticked) == 600
    assert all(
        re.fullmatch(r"stage [01] \[\d+/300\] (item ){20} built \(\d+\.\ds\)", s) for s in ticked
    )


_ON_A_TERMINAL = """
import time
from continuity.progress import progress, stages
with stages("offline contract", 3):
    for stage in ("traces original", "units original"):
        with progress(stage) as tick:
            for i in range(3):
                tick(i + 1, 3, "r1 a-trace-whose-name-is-long " * 6, "built")
                time.sleep(0.05)
"""


def test_one_overall_bar_on_a_real_terminal_fits_its_width() -> None:
    """On a pseudo-terminal of 72 columns: one overall bar (2 of 3 stages, the third
    never ran), each stage's bar removed once it ends, and no line wider than 72."""
    parent, child = pty.openpty()
    env = {**os.environ, "COLUMNS": "72", "LINES": "20", "TERM": "xterm"}
    process = subprocess.Popen(
        [sys.executable, "-c", _ON_A_TERMINAL], stdout=child, stderr=child, env=env
    )
    os.close(child)
    chunks = []
    while True:
        try:
            chunk = os.read(parent, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(parent)
    assert process.wait(timeout=60) == 0
    screen = b"".join(chunks).decode("utf-8", "replace")
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen)
    final = [line for line in plain.replace("\r", "\n").splitlines() if line.strip()]
    assert max(len(line) for line in final) <= 72
    assert "offline contract" in plain and "2/3" in final[-1]
    assert "units original" in plain and "…" in plain  # the long item cut, not wrapped
