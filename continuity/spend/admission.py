"""The final payload of one guarded request, and its admission size U_k.

After the client builds its payload and the caller's ``on_payload`` hook has run, the
payload is serialized once; those bytes, detached from every hook, are what is checked
(`continuity.spend.payload.check_payload`), bound to the contract's model, effort and
cache key, measured and later sent. Every refusal here happens before admission
(outcome ``refused_pre_send``): ``lookup_payload_invalid``, ``lookup_contract_mismatch``,
``lookup_prompt_cache_key_forbidden`` (the payload's key is missing or not the declared
one), ``not_admitted_input_envelope`` (U_k > I).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from continuity.errors import SpendError
from continuity.spend.assumptions import Assumptions
from continuity.spend.contract import GuardContract
from continuity.spend.payload import Admission, admission_size, check_payload

__all__ = ["final_payload"]


def final_payload(
    payload: dict[str, Any],
    hook: Callable[[dict[str, Any]], Any] | None,
    contract: GuardContract,
    *,
    first: bool,
    prior_output: int,
    assumptions: Assumptions,
    location: str,
) -> tuple[bytes, Admission]:
    """The final payload's bytes and its admission size (`first`: the run's first
    request; `prior_output`: the run's settled output tokens so far; `location`: the
    request id, for an envelope refusal)."""
    if hook is not None:
        changed = hook(payload)
        payload = payload if changed is None else changed
    try:
        body = msgspec.json.encode(payload)
        final = msgspec.json.decode(body)
    except (msgspec.MsgspecError, TypeError) as exc:
        raise SpendError(
            f"the payload does not serialize: {exc}",
            code="lookup_payload_invalid",
            location="payload",
            outcome="refused_pre_send",
        ) from None
    if not isinstance(final, dict):
        raise SpendError(
            "the payload is not an object",
            code="lookup_payload_invalid",
            location="payload",
            outcome="refused_pre_send",
        )
    check_payload(final, first=first)
    reasoning = final.get("reasoning")
    effort = reasoning.get("effort") if isinstance(reasoning, dict) else None
    if final.get("model") != contract.model or effort != contract.effort:
        raise SpendError(
            f"the payload's model and effort are not {contract.model_id} at {contract.effort}",
            code="lookup_contract_mismatch",
            location="payload.model",
            outcome="refused_pre_send",
        )
    if final.get("prompt_cache_key") != contract.prompt_cache_key:
        raise SpendError(
            "the payload's prompt_cache_key is not the declared cache key (none is allowed "
            "without one)",
            code="lookup_prompt_cache_key_forbidden",
            location="payload.prompt_cache_key",
            outcome="refused_pre_send",
        )
    admission = admission_size(final, body, prior_output, assumptions)
    if admission.u > assumptions.input_envelope:
        raise SpendError(
            f"U = {admission.u:,} exceeds the input envelope I = {assumptions.input_envelope:,}",
            code="not_admitted_input_envelope",
            location=location,
            outcome="refused_pre_send",
        )
    return body, admission
