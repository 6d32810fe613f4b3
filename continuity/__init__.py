"""continuity: what an agent still knows after a context-reducing boundary."""

__version__ = "0.1.0"
