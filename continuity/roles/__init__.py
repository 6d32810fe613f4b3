"""Cross-checkout comparison roles (issue 15): guidance as a treatment, frozen souls,
six roles over two clean checkouts of this project, their registration, runs and
aggregate. Seed 000, "Cross-checkout lookup roles (offline only)"."""

__all__: list[str] = []
