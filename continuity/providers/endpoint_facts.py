"""What a real endpoint was seen to do, kept in the store: an output cap it ignored.

When a server writes past the output cap it was sent (``provider_output_cap_ignored``),
the call cache records the endpoint (base URL and model) under the ref
``endpoints/output-cap-ignored/<digest>``. From then on the spend controller treats that
endpoint's output cap as unenforced:

- a run cost cap on it is refused (``cost_cap_output_unenforced``): a hold's worst case
  assumes output stops at the cap, which this endpoint was seen not to do;
- the cap-gated pilot's readiness check (``doit compare_pilot``) reports its output cap
  as ``unknown``, whatever its transport, so the pilot refuses it
  (``lookup_pilot_reader_not_ready``). The offline lookup estimate's readiness table
  reads no store and does not show the fact.

The ref is a fact about the endpoint, not about a run, so it outlives the run that saw
it. To trust the endpoint again once its server is fixed, delete the ref file (the
refusal names it).
"""

from __future__ import annotations

import datetime as dt

from continuity.digest import value_digest
from continuity.store import Store

__all__ = ["IGNORED_CAP_REFS", "cap_ignored", "ignored_cap_ref", "record_cap_ignored"]

IGNORED_CAP_REFS = "endpoints/output-cap-ignored"


def ignored_cap_ref(base_url: str, model: str) -> str:
    """The ref name of an endpoint (base URL without a trailing slash, and model)."""
    return f"{IGNORED_CAP_REFS}/{value_digest(('endpoint', base_url.rstrip('/'), model))[:32]}"


def record_cap_ignored(store: Store, base_url: str, model: str, message: str) -> None:
    """Note that the endpoint ignored its output cap (what it did, and when)."""
    store.set_ref(
        ignored_cap_ref(base_url, model),
        meta={
            "base_url": base_url.rstrip("/"),
            "model": model,
            "observed": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "message": message[:500],
        },
    )


def cap_ignored(store: Store, base_url: str, model: str) -> str | None:
    """When and how the endpoint was seen to ignore its output cap (None: never)."""
    ref = store.get_ref(ignored_cap_ref(base_url, model))
    if ref is None:
        return None
    return f"{ref.meta.get('observed', '?')}: {ref.meta.get('message', '')}"
