"""The reference harness: durable sessions, tool history, the agent loop, replay."""

__all__: list[str] = []
