"""Cross-checkout comparison roles (offline only): guidance as a treatment, frozen souls,
six roles over two clean checkouts of this project, their registration, runs and
aggregate."""

__all__: list[str] = []
