"""The servers one outside-agent sample talks to, and what the adapter is told of them.

`serve_sample` serves the model proxy and the MCP fixture on loopback at unguessable
paths and, for the store arm, the ConversationHistory MCP server over the reference
harness's retained store behind lookup mode's metering proxy (the same budgets: a call
over them is never sent). Sandboxed, each also serves on a Unix socket in a short
private folder, and the sandbox forwards its loopback port inside to that socket (the
URLs are unchanged; nothing else is reachable). `init_params` is what ``initialize``
carries: the workspace as the adapter sees it, the proxy as its model endpoint (its
roles named), the fixture as its one MCP server.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from continuity.agents.protocol import ApiName, InitParams, McpServer, ModelEndpoint
from continuity.agents.sandbox import Confinement
from continuity.lookup.meter import Meter, metered_history
from continuity.lookup.policy import load_policy
from continuity.memory.retained import RetainedStore
from continuity.servers.fixture import FixtureToolServer
from continuity.servers.history import serve_history
from continuity.servers.model_proxy import AUX, MAIN, ModelProxy
from continuity.servers.wire import serve_in_thread

__all__ = ["DUMMY_KEY", "Served", "init_params", "serve_sample"]

DUMMY_KEY = "continuity-dummy-key"


@dataclass(frozen=True)
class Served:
    proxy_url: str
    mcp_url: str
    confined: Confinement | None  # the sandboxed adapter's ways out (None unsandboxed)
    history_url: str | None = None  # the metered ConversationHistory (store arm)
    meter: Meter | None = None


@contextlib.contextmanager
def _socket_dir(sandboxed: bool) -> Iterator[Path | None]:
    """A short private directory for the servers' Unix sockets (a path holds at most
    107 bytes), removed afterwards; None unsandboxed."""
    if not sandboxed:
        yield None
        return
    folder = Path(tempfile.mkdtemp(prefix="cap-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.asynccontextmanager
async def _history(
    retained: Path | None, unix: Path | None
) -> AsyncIterator[tuple[str | None, Meter | None]]:
    """ConversationHistory over `retained` behind a fresh meter, or nothing."""
    if retained is None:
        yield None, None
        return
    store = RetainedStore(retained, readonly=True)
    try:
        async with (
            serve_history(store) as upstream,
            metered_history(upstream, load_policy(), unix=unix) as (url, meter),
        ):
            yield url, meter
    finally:
        store.close()


@contextlib.asynccontextmanager
async def serve_sample(
    proxy: ModelProxy,
    fixture: FixtureToolServer,
    hidden: tuple[Path, ...],
    sandboxed: bool,
    retained: Path | None = None,
) -> AsyncIterator[Served]:
    """Serve the sample's servers (module doc); `hidden` is what the sandbox protects
    besides its own list (the unit's work, the store, the credentials)."""
    with _socket_dir(sandboxed) as sockets:
        names = ("proxy", "mcp", "history")
        paths = [None, None, None] if sockets is None else [sockets / n for n in names]
        with serve_in_thread(proxy, unix=paths[0]) as proxy_url:
            async with (
                fixture.running(token=proxy.token, unix=paths[1]) as mcp_url,
                _history(retained, paths[2]) as (history_url, meter),
            ):
                confined = None
                if sockets is not None:
                    urls = (proxy_url, mcp_url, history_url)
                    forwards = tuple(
                        (urlsplit(u).port or 0, n)
                        for u, n in zip(urls, names, strict=True)
                        if u is not None
                    )
                    confined = Confinement(sockets=sockets, forwards=forwards, protected=hidden)
                yield Served(proxy_url, mcp_url, confined, history_url, meter)


def init_params(
    workspace: str, proxy: ModelProxy, served: Served, api: ApiName = "openai-chat"
) -> InitParams:
    """What the adapter is initialized with: its `workspace` as it sees it, the model
    proxy as its model endpoint for every role (in the wire format `api` the manifest
    names first; the proxy serves every format at the one base URL) and the fixture as
    its one MCP server."""
    model = ModelEndpoint(
        api=api,
        base_url=f"{served.proxy_url}/{proxy.token}/v1",
        api_key=DUMMY_KEY,
        roles={"main": MAIN, "aux": AUX},  # a switch names its model when it comes
    )
    return InitParams(
        workspace=workspace,
        model=model,
        mcp_servers=[McpServer(name="fixture", url=served.mcp_url)],
        identity={"user_id": "owner"},
    )
