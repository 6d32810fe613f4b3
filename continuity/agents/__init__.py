"""CAP/0, the continuity agent protocol: how continuity drives an outside agent.

JSON-RPC 2.0 over the adapter's stdin and stdout, one message per line; stderr is the
adapter's log. Continuity spawns the adapter from its manifest (``agent.toml``,
`continuity.agents.manifest`) in a process group it owns (`continuity.agents.client`);
an adapter written in Python implements `AgentAdapter` and calls `serve_stdio`
(`continuity.agents.sdk`). The messages are `continuity.agents.protocol`.
"""

__all__ = [
    "check",
    "client",
    "crossing",
    "drive",
    "identity",
    "manifest",
    "protocol",
    "readers",
    "retained",
    "sandbox",
    "steering",
    "units",
]
