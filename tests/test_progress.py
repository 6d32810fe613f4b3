"""Progress output: plain lines off a terminal (CI), a rich bar on one."""

from __future__ import annotations

import io
from typing import Any

import pytest

from continuity.progress import progress


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
