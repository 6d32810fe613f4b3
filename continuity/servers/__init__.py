"""Servers the benchmark runs on loopback: the MCP tool servers (`fixture`, `history`;
never a module named `mcp`), the scripted model speaking the real wire formats (`wire`
and its per-format modules) and the ASGI serving they share (`asgi`)."""

from __future__ import annotations

__all__ = [
    "asgi",
    "fixture",
    "history",
    "model_proxy",
    "proxy_anthropic",
    "proxy_chat",
    "proxy_responses",
    "proxy_script",
    "wire",
    "wire_options",
]
