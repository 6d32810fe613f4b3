"""Running the plan: checkpoints per suite (later: units and executors)."""
