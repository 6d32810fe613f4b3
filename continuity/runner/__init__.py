"""Running the plan: checkpoints per suite (later: units and executors)."""

__all__: list[str] = []
