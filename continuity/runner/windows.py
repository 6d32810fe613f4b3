"""Context windows before spending: every planned call is checked against the smallest
window anyone knows, before the first request of a real run.

The dry run already refused plans whose calls do not fit the windows it could know
offline (``--context-window``, the price data: ``model_limit_exceeded``). Here, after
every guard has passed and before any model call, the server is asked as well
(`continuity.providers.window`): a call whose input estimate plus the output cap it
reserves is above the smallest known window is refused with ``context_window_exceeded``,
naming the window's source. The input estimates are Pi's ``ceil(chars / 4)`` (the dry
run's); a tokenizer that counts more is caught by the server itself, as
``provider_context_exceeded``.
"""

from __future__ import annotations

import httpx
import msgspec

from continuity.errors import RealModeError
from continuity.plan.estimate import DryRun, output_cap
from continuity.plan.plan import Plan
from continuity.plan.pricing import Catalog, model_price
from continuity.providers.window import ServerWindow, server_window

__all__ = ["KnownWindow", "check_context_windows", "known_window"]


class KnownWindow(msgspec.Struct, frozen=True):
    """The smallest window known for a model, and every source that named one."""

    tokens: int | None
    sources: list[str]


def known_window(
    plan: Plan, model: str, catalog: Catalog, server: ServerWindow | None
) -> KnownWindow:
    """The smallest of the plan's, the server's and the price data's windows."""
    price = model_price(catalog, model)
    named: list[tuple[int, str]] = []
    if plan.context_window:
        named.append((plan.context_window, "--context-window"))
    if server is not None:
        named.append((server.tokens, server.source))
    if price is not None and price.context_window:
        named.append((price.context_window, "price data"))
    if not named:
        return KnownWindow(None, [])
    return KnownWindow(min(t for t, _ in named), [f"{t:,} ({s})" for t, s in named])


def check_context_windows(
    plan: Plan,
    dry: DryRun,
    catalog: Catalog,
    *,
    transport: httpx.BaseTransport | None = None,
) -> dict[str, KnownWindow]:
    """Ask the server, then refuse a plan with a call that cannot fit; the windows found.

    Raises:
        RealModeError: ``context_window_exceeded`` (at the base URL), before any call.
    """
    cap = output_cap(plan)
    found: dict[str, KnownWindow] = {}
    for ref, inputs in dry.planned_inputs.items():
        model = ref.split(":", 1)[1] if ":" in ref else ref
        window = known_window(
            plan, ref, catalog, server_window(plan.endpoint.base_url, model, transport=transport)
        )
        found[ref] = window
        if window.tokens is None:
            continue
        over = [tokens for tokens in inputs if tokens + cap > window.tokens]
        if over:
            raise RealModeError(
                f"{len(over)} of {len(inputs)} planned {ref} calls do not fit its context "
                f"window of {window.tokens:,} tokens ({'; '.join(window.sources)}): the "
                f"largest is about {max(over):,} input tokens plus the {cap:,}-token output "
                "cap. Nothing was sent; choose a shorter suite or fewer arms, a smaller "
                "--max-output-tokens, or a server with a larger window",
                code="context_window_exceeded",
                location=plan.endpoint.base_url,
            )
    return found
