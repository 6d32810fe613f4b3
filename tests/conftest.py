"""Shared fixtures: every test gets its own store and output directory."""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol, TypeVar

import pytest

from continuity.store import Store
from tests.shared_backends import backend, s3_endpoint  # noqa: F401 (fixtures for every module)

REPO = Path(__file__).resolve().parents[1]
ORIGINALS = REPO / "fixtures" / "original"
SLOW_LIST = Path(__file__).with_name("slow_tests.txt")


def _cache_bytecode() -> None:
    """Let the suite's Python processes cache bytecode, outside the source tree.

    The suite starts well over a thousand Python processes (doit commands, unit workers,
    servers, adapters). Where the environment forbids writing bytecode
    (``PYTHONDONTWRITEBYTECODE``, as on a fresh CI clone with no ``__pycache__`` yet),
    every one of them compiles the package from source again, and pytest rewrites every
    test module's asserts in each worker again. Such an environment gets a bytecode
    cache under the temporary directory instead (``PYTHONPYCACHEPREFIX``), inherited
    by the xdist workers and every child: the checkout stays free of bytecode."""
    if not sys.dont_write_bytecode:
        return
    prefix = str(Path(tempfile.gettempdir()) / f"continuity-tests-pycache-{os.getuid()}")
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = prefix
    sys.dont_write_bytecode = False
    sys.pycache_prefix = prefix


_cache_bytecode()


def slow_entries(text: str) -> set[str]:
    """The entries of tests/slow_tests.txt: test modules and test functions."""
    lines = (line.split("#", 1)[0].strip() for line in text.splitlines())
    return {line for line in lines if line}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark `slow` every test tests/slow_tests.txt names, by module or by function, and
    every full-size `variant`, so ``-m "not slow"`` runs the fast tier."""
    entries = slow_entries(SLOW_LIST.read_text(encoding="utf-8"))
    for item in items:
        module, _, rest = item.nodeid.partition("::")
        # "test_x[param]", and under xdist's loadgroup "test_x@group": the function's name
        function = f"{module}::{re.split(r'[@[]', rest, maxsplit=1)[0]}"
        if module in entries or function in entries or item.get_closest_marker("variant"):
            item.add_marker(pytest.mark.slow)
    # Modules with a slow test first, each module kept together (its module fixtures are
    # built once): workers start the long tests early, so the run does not end on one
    # worker finishing a long test alone.
    slow_modules = {i.nodeid.partition("::")[0] for i in items if i.get_closest_marker("slow")}
    items.sort(key=lambda item: item.nodeid.partition("::")[0] not in slow_modules)


@pytest.fixture(autouse=True)
def _isolated_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # Nothing a test does may touch the checkout's store/ or out/.
    monkeypatch.setenv("CONTINUITY_STORE", str(tmp_path / "env-store"))
    monkeypatch.setenv("CONTINUITY_OUT", str(tmp_path / "env-out"))
    yield


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "store")


@pytest.fixture
def out_dir(tmp_path: Path) -> Path:
    return tmp_path / "out"


def store_files(store: Store) -> dict[str, bytes]:
    """Every file under objects/, actions/ and refs/ with its bytes."""
    files = {}
    for folder in (store.objects_dir, store.actions_dir, store.refs_dir):
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                files[str(path.relative_to(store.root))] = path.read_bytes()
    return files


@pytest.fixture
def anyio_backend() -> str:
    # uvicorn (which serves the MCP fixture servers) runs on asyncio only.
    return "asyncio"


_OPENED: list[str] | None = None


def _audit(event: str, args: tuple[object, ...]) -> None:
    if _OPENED is not None and event == "open" and args and isinstance(args[0], str | Path):
        _OPENED.append(str(args[0]))


@pytest.fixture
def opened_files() -> Iterator[list[str]]:
    """Every path this process opens while the test runs (a `sys.addaudithook` hook,
    installed once: audit hooks cannot be removed)."""
    global _OPENED
    if not getattr(_audit, "installed", False):
        sys.addaudithook(_audit)
        _audit.installed = True  # type: ignore[attr-defined]
    _OPENED = []
    try:
        yield _OPENED
    finally:
        _OPENED = None


def git(checkout: Path, *args: str) -> None:
    import subprocess

    subprocess.run(["git", "-C", str(checkout), *args], check=True, capture_output=True)


@pytest.fixture
def clean_checkout(tmp_path: Path) -> Path:
    """A clean git checkout standing in for this repository in real-mode guards."""
    root = tmp_path / "checkout"
    root.mkdir()
    git(root, "init", "-q")
    git(root, "config", "user.email", "t@example.invalid")
    git(root, "config", "user.name", "t")
    (root / "tracked.txt").write_text("tracked\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "init")
    return root


_Closable = TypeVar("_Closable", bound="SupportsClose")


class SupportsClose(Protocol):
    def close(self) -> None: ...


class Closer(Protocol):
    """The `close_after` fixture: registers `client` and returns it."""

    def __call__(self, client: _Closable) -> _Closable: ...


@pytest.fixture
def close_after() -> Iterator[Closer]:
    """Register a client (an SDK's, anything with ``close()``) to be closed when the test
    ends, passed or failed: an unclosed client's pooled socket would be collected, and
    reported as an unraisable ResourceWarning, during some later test."""
    opened: list[SupportsClose] = []

    def register(client: _Closable) -> _Closable:
        opened.append(client)
        return client

    yield register
    for client in reversed(opened):
        client.close()
