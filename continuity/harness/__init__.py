"""The reference harness: durable sessions, tool history, the agent loop, replay."""

__all__ = [
    "checkpoints",
    "compaction",
    "config",
    "keys",
    "loop",
    "replay",
    "reseed",
    "session",
    "template",
    "tool_history",
    "toolbox",
    "workspace",
]
