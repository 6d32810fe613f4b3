"""A real run's cost-cap account: the ``--cost-cap`` value, the account, its totals.

`open_cost_account` creates the run's account (``<out>/.spend/cost-cap.sqlite3``,
`continuity.providers.costcap`) or reopens it for a resumed invocation. **The cap is the
account's**: a resumed run without ``--cost-cap`` keeps the stored cap, the same cap is
a no-op, and another one is ``cost_cap_mismatch`` (naming both) unless ``--raise-cap``
is given, which stores it and records the change (who, when, old, new) in the account.
`spend_totals` writes the account's totals, changes included, to ``<out>/spend.json``.

A run whose units go to a cluster over a shared store keeps its account in that store
instead (`continuity.providers.shared_accounts`), under ``accounts/<run>/`` (`run_accounts`),
so every worker holds against it before it sends. Where the account is, is the run's:
``<out>/.spend/shared-account`` names a shared account's ref once it is created, and every
later invocation of the run holds there, whatever its executor and however it reaches
``--out``. A run whose account is the SQLite file cannot move it to a shared store
(``cost_cap_account_local``: remote workers could not reach it): finish it without
``--shared-store``.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import msgspec

from continuity.digest import digest_bytes
from continuity.errors import RealModeError
from continuity.outputs import write_output
from continuity.plan.plan import Plan, plan_digest
from continuity.plan.pricing import load_catalog, model_price, rate_card
from continuity.providers.costcap import ACCOUNT_NAME, CapTotals, CostCap, RateCard
from continuity.providers.endpoint_facts import cap_ignored, ignored_cap_ref
from continuity.providers.shared_accounts import (
    SharedCostCap,
    is_shared,
    open_account,
    shared_ref,
)
from continuity.spend.money import parse_usd, whole_cents
from continuity.store import Store

__all__ = ["POINTER", "open_cost_account", "parse_cost_cap", "run_accounts", "spend_totals"]

POINTER = "shared-account"  # <out>/.spend/shared-account: the ref of a run's shared account


def run_accounts(plan: Plan, out: Path, shared: str) -> str:
    """The prefix of the run's accounts in the shared store at `shared` (its URL as
    the backend spells it): ``accounts/<blake3 of the plan digest and --out>``."""
    run = digest_bytes(f"{plan_digest(plan)}\n{out.resolve()}".encode())
    return shared_ref(shared, f"accounts/{run}")


def parse_cost_cap(text: str | None, *, raise_cap: bool = False) -> Decimal | None:
    """A ``--cost-cap`` value: US dollars in whole cents, above zero (None: no cap).

    Raises:
        RealModeError: ``cost_cap_invalid`` at ``--cost-cap``, or at ``--raise-cap``
            when `raise_cap` comes without a cap to raise to.
    """
    if text is None or text == "":
        if raise_cap:
            raise RealModeError(
                "--raise-cap changes the run's stored cap to the --cost-cap given; give one",
                code="cost_cap_invalid",
                location="--raise-cap",
            )
        return None
    amount = parse_usd(text)
    if amount is None or amount <= 0 or whole_cents(amount) is None:
        raise RealModeError(
            f"--cost-cap must be US dollars in whole cents above zero, such as 5 or "
            f"12.50; got {text!r}",
            code="cost_cap_invalid",
            location="--cost-cap",
        )
    return amount


def open_cost_account(
    plan: Plan,
    out: Path,
    cap: Decimal | None,
    invocation: str,
    pricing: str | None,
    store: Store,
    *,
    raise_cap: bool = False,
    shared: str = "",
) -> str | None:
    """Create or reopen the run's cost-cap account (None: the run has none and no cap
    was given); its path, or its shared ref when `shared` names the run's accounts in
    a shared store (`run_accounts`). Every model the run calls must have known input
    and output rates, and an endpoint that was seen to ignore its output cap cannot be
    capped. A `cap` other than the stored one needs `raise_cap` (module doc).

    Raises:
        RealModeError: ``cost_cap_price_unknown``, ``cost_cap_output_unenforced``,
            ``cost_cap_mismatch``.
    """
    path = out / ".spend" / ACCOUNT_NAME
    ref, exists = _where(path, shared, invocation)
    if cap is None and not exists:
        return None
    catalog = load_catalog(Path(pricing) if pricing else None)
    models = [plan.reader, *([plan.judge] if plan.judge else [])]
    models += [plan.switch_model] if plan.switch_model else []
    if plan.ledger is not None:
        models.append(plan.ledger.extraction_model)
    rates: dict[str, RateCard] = {}
    for model in dict.fromkeys(models):
        seen = cap_ignored(store, plan.endpoint.base_url, model.split(":", 1)[1])
        if seen is not None:
            raise RealModeError(
                f"{model} at {plan.endpoint.base_url} was seen to write past its output cap "
                f"({seen}); a cost cap's holds assume output stops at the cap, so this "
                "endpoint cannot be capped. Delete the store ref "
                f"{ignored_cap_ref(plan.endpoint.base_url, model.split(':', 1)[1])} once its "
                "server honours the cap",
                code="cost_cap_output_unenforced",
                location=model,
            )
        price = model_price(catalog, model)
        card = rate_card(price) if price is not None else None
        missing = ["price"] if card is None else card.missing()
        if card is None or missing:
            raise RealModeError(
                f"a cost cap needs {model}'s input and output rates; missing: "
                f"{', '.join(missing)} (add them to the pricing catalog, --pricing FILE)",
                code="cost_cap_price_unknown",
                location=model,
            )
        rates[model] = card
    if is_shared(ref):
        SharedCostCap.create(ref, cap=cap, rates=rates, invocation=invocation, raise_cap=raise_cap)
        write_output(path.with_name(POINTER), ref.encode() + b"\n")  # the run's, from now on
    else:
        CostCap.create(
            path, cap=cap, rates=rates, invocation=invocation, raise_cap=raise_cap
        ).close()
    return ref


def _where(path: Path, shared: str, invocation: str) -> tuple[str, bool]:
    """Where the run's account is (or is to be made) and whether it exists: the shared
    account its pointer names, the SQLite file at `path`, or (new) under `shared`.

    Raises:
        RealModeError: ``cost_cap_account_local``.
    """
    pointer = path.with_name(POINTER)
    if pointer.is_file():
        ref = pointer.read_text(encoding="utf-8").strip()
        return ref, SharedCostCap(ref, invocation).exists()
    if path.exists():
        if shared:
            raise RealModeError(
                f"this run's cost-cap account is the file {path}, which workers on other "
                "machines cannot reach: finish the run without --shared-store (locally, or "
                "on a LocalCluster), or start a new run (another --out) on the cluster",
                code="cost_cap_account_local",
                location="--shared-store",
            )
        return str(path), True
    if shared:
        ref = f"{shared}/cost-cap.json"
        return ref, SharedCostCap(ref, invocation).exists()
    return str(path), False


def spend_totals(account: str | None, out: Path) -> CapTotals | None:
    """The account's totals, also written to ``<out>/spend.json``."""
    if account is None:
        return None
    cost = open_account(account, "")
    try:
        totals = cost.totals()
    finally:
        cost.close()
    write_output(out / "spend.json", msgspec.json.format(msgspec.json.encode(totals)) + b"\n")
    return totals
