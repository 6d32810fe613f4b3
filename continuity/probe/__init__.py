"""The probe child (layer 9): the unit worker, a fresh process per probe that crosses
the arm's boundary and asks the reader, and the sealed evidence and receipts it reports."""

__all__: list[str] = []
