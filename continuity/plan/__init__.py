"""Plans, workload and price estimates, and the guards around real mode."""

__all__: list[str] = []
