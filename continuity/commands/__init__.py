"""The commands: one entry point per doit task that runs work, taking the task's
options and returning its summary line (`units.run_units`). `rules/` declares each
task's options and calls its entry point; nothing below this layer reads a doit
option."""

__all__ = ["agent_units", "selection", "units"]
