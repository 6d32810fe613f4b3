"""ConversationHistory on a store that is missing, not SQLite, or breaks while serving.

Refused at start: standalone with one ``error history_unavailable`` line and exit 2,
in-process with `HistoryError` ``history_unavailable``. Broken while serving: every call
is a ``history_unavailable`` tool error (never a raw SQLite protocol error).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from continuity.errors import HistoryError, ToolError
from continuity.harness.toolbox import McpToolbox
from continuity.memory.retained import RetainedStore
from continuity.messages import ToolCallRequest
from continuity.servers.history import HISTORY_TOOL, serve_history

SEARCH = {"action": "search", "query": "side entrance"}


def _make_store(path: Path) -> Path:
    store = RetainedStore(path)
    store.retain_owner("Keep the side entrance for deliveries.", source="steer", entry_ref="e1")
    store.retain_tool_result(
        "Quayside board update.", tool="chat_history", tool_kind="chat", entry_ref="e2"
    )
    store.close()
    return path


def _not_sqlite(path: Path) -> Path:
    path.write_bytes(b"this is a plain text file, not a database\n" * 40)
    return path


def _empty(path: Path) -> Path:
    path.write_bytes(b"")
    return path


def _sqlite_without_tables(path: Path) -> Path:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE other (x INTEGER)")
    db.commit()
    db.close()
    return path


def _corrupt_after_header(path: Path) -> Path:
    _make_store(path)
    data = bytearray(path.read_bytes())
    data[16:] = b"\xff" * (len(data) - 16)  # a valid header over garbage pages
    path.write_bytes(bytes(data))
    return path


BAD_STORES: dict[str, Callable[[Path], Path]] = {
    "missing": lambda path: path,
    "not_sqlite": _not_sqlite,
    "empty": _empty,
    "sqlite_without_tables": _sqlite_without_tables,
    "corrupt_after_header": _corrupt_after_header,
}


@pytest.mark.parametrize("kind", sorted(BAD_STORES))
def test_standalone_refuses_a_bad_store_with_one_line(tmp_path: Path, kind: str) -> None:
    path = BAD_STORES[kind](tmp_path / "retained.sqlite3")
    before = path.read_bytes() if path.exists() else None
    for extra in ([], ["--http"]):
        result = subprocess.run(
            [sys.executable, "-m", "continuity.servers.history", "--store", str(path), *extra],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        assert result.returncode == 2, result.stderr
        assert result.stdout == ""
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error history_unavailable: ")
        assert str(path) in lines[0]
    # Refusing never creates or changes the file.
    assert (path.read_bytes() if path.exists() else None) == before


def test_standalone_refuses_a_directory_without_a_store(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "continuity.servers.history", "--store", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("error history_unavailable: no retained store")
    assert not (tmp_path / "retained.sqlite3").exists()


@pytest.mark.parametrize("kind", sorted(BAD_STORES))
@pytest.mark.parametrize("readonly", [True, False])
def test_opening_a_bad_store_is_a_typed_error(tmp_path: Path, kind: str, readonly: bool) -> None:
    path = BAD_STORES[kind](tmp_path / "retained.sqlite3")
    if kind in ("missing", "sqlite_without_tables") and not readonly:
        RetainedStore(path).close()  # a writable store creates its tables
        reopened = RetainedStore(path, readonly=True)
        assert reopened.stats().records == 0
        reopened.close()
        return
    with pytest.raises(HistoryError) as err:
        RetainedStore(path, readonly=readonly)
    assert err.value.code == "history_unavailable" and err.value.location == str(path)


@pytest.mark.anyio
async def test_serve_history_refuses_a_store_gone_before_serving(tmp_path: Path) -> None:
    path = _make_store(tmp_path / "retained.sqlite3")
    store = RetainedStore(path, readonly=True)
    try:
        path.unlink()
        with pytest.raises(HistoryError) as err:
            async with serve_history(store):
                pytest.fail("served a deleted store")
        assert err.value.code == "history_unavailable"
    finally:
        store.close()


def _delete(path: Path) -> None:
    path.unlink()


def _replace(path: Path) -> None:
    # Another valid retained store renamed over the path: a different file.
    other = _make_store(path.parent / "other.sqlite3")
    os.replace(other, path)


def _overwrite_in_place(path: Path) -> None:
    with path.open("r+b") as handle:
        handle.write(b"\x00" * path.stat().st_size)


def _truncate_in_place(path: Path) -> None:
    with path.open("r+b") as handle:
        handle.truncate(0)


BREAKS: dict[str, Callable[[Path], None]] = {
    "deleted": _delete,
    "replaced": _replace,
    "overwritten": _overwrite_in_place,
    "truncated": _truncate_in_place,
}


@pytest.mark.anyio
@pytest.mark.parametrize("how", sorted(BREAKS))
async def test_a_store_broken_while_serving_answers_history_unavailable(
    tmp_path: Path, how: str
) -> None:
    path = _make_store(tmp_path / "retained.sqlite3")
    store = RetainedStore(path, readonly=True)
    try:
        async with serve_history(store) as url, McpToolbox(url) as toolbox:
            assert "deliveries" in await toolbox.call(ToolCallRequest("c", HISTORY_TOOL, SEARCH))
            BREAKS[how](path)
            for arguments in (SEARCH, {"action": "get", "id": "c1"}):
                with pytest.raises(ToolError) as err:
                    await toolbox.call(ToolCallRequest("c", HISTORY_TOOL, arguments))
                assert err.value.code == "tool_call_failed"
                assert "history_unavailable" in err.value.message
                assert "MCP error" not in err.value.message
    finally:
        store.close()


@pytest.mark.anyio
async def test_standalone_stdio_store_deleted_while_serving(tmp_path: Path) -> None:
    path = _make_store(tmp_path / "retained.sqlite3")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "continuity.servers.history", "--store", str(path)],
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        result = await session.call_tool(HISTORY_TOOL, SEARCH)
        assert not result.is_error
        shutil.copy(path, tmp_path / "kept.sqlite3")
        path.unlink()
        result = await session.call_tool(HISTORY_TOOL, SEARCH)
        assert result.is_error
        text = result.content[0].text  # type: ignore[union-attr]
        assert text.startswith("history_unavailable: the retained store is gone")
        # Put back (a new file at the path), it is still refused: the open handle
        # never silently switches files.
        shutil.copy(tmp_path / "kept.sqlite3", path)
        result = await session.call_tool(HISTORY_TOOL, SEARCH)
        assert result.is_error
        assert result.content[0].text.startswith(  # type: ignore[union-attr]
            "history_unavailable: the retained store was replaced"
        )
