"""continuity: what an agent still knows after a context-reducing boundary."""

__all__ = ["__version__"]

__version__ = "0.1.0"
