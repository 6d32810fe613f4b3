"""The spend rules without a network: exact money, assumed-v1, the cap account (with a
property test over random outcome sequences), payload allowlists and H, raw usage,
options and auxiliary callers, and the test-only permit source's own refusals."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import httpx
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from continuity.errors import SpendError
from continuity.spend.account import CapAccount
from continuity.spend.assumptions import (
    ASSUMED_V1,
    Framing,
    Rates,
    assumptions_digest,
    check_assumptions,
    reservation,
    tier_multiplier,
)
from continuity.spend.contract import AuxiliaryCallers, check_auxiliary_callers, check_options
from continuity.spend.money import ceil_to_cents, parse_usd, whole_cents
from continuity.spend.payload import admission_size, check_payload, framing, schema_properties
from continuity.spend.permits import (
    FAUX_BRAND,
    Permit,
    Refusal,
    Settlement,
    TestOnlyPermitSource,
    assert_real_permit_source,
)
from continuity.spend.transport import Armed, GuardTransport
from continuity.spend.usage import catalog_cost, raw_settlement, settlement_violation
from tests.spend.conftest import CALLERS_OFF, RMAX, contract_for

# -- money and assumed-v1


def test_rmax_is_exactly_three_ninety_two() -> None:
    # 2 x (272,000 x 2.5 + 128,000 x 10) / 10^6: the input class includes cache writes.
    rmax = reservation(ASSUMED_V1)
    assert isinstance(rmax, Decimal) and str(rmax) == "3.92"
    assert rmax == Decimal(2) * (272_000 * Decimal("2.5") + 128_000 * 10) / 10**6
    assert rmax == Decimal(ASSUMED_V1.rmax)
    assert check_assumptions(ASSUMED_V1) == assumptions_digest(ASSUMED_V1)


def test_assumed_v1_is_deeply_frozen() -> None:
    with pytest.raises(AttributeError):
        ASSUMED_V1.rmax = "1"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        ASSUMED_V1.rates.output = "1"  # type: ignore[misc]
    assert isinstance(ASSUMED_V1.tiers, tuple)


@pytest.mark.parametrize(
    "change",
    [
        {"rates": Rates(input="2", output="10", cache_read="0.1", cache_write="3")},
        {"input_envelope": 300_000},
        {"max_output": 64_000},
        {"max_requests": 11},
        {"tiers": (("default", "1"), ("flex", "0.5"))},
        {"absent_tier_multiplier": "1"},
        {
            "framing": Framing(
                per_request=2048,
                per_input_item=256,
                per_reasoning_item=1024,
                per_tool=1024,
                per_schema_property=256,
                instructions=4096,
            )
        },
    ],
)
def test_a_changed_registry_is_refused(change: dict[str, Any]) -> None:
    altered = msgspec.structs.replace(ASSUMED_V1, **change)
    with pytest.raises(SpendError) as caught:
        check_assumptions(altered)
    assert caught.value.code == "lookup_assumptions_changed"
    assert assumptions_digest(altered) != assumptions_digest(ASSUMED_V1)


def test_an_altered_maximum_is_refused() -> None:
    with pytest.raises(SpendError) as caught:
        check_assumptions(msgspec.structs.replace(ASSUMED_V1, rmax="3.91"))
    assert caught.value.code == "lookup_rmax_altered"


@pytest.mark.parametrize(
    ("tier", "factor"),
    [("default", "1"), ("flex", "0.5"), ("priority", "2"), (None, "2"), ("scale", None), (3, None)],
)
def test_tier_multipliers(tier: object, factor: str | None) -> None:
    expected = None if factor is None else Decimal(factor)
    assert tier_multiplier(ASSUMED_V1, tier) == expected


def test_money_is_exact_text_never_float() -> None:
    assert parse_usd("10.25") == Decimal("10.25")
    assert parse_usd("1e3") is None and parse_usd("nan") is None and parse_usd("-1") is None
    assert whole_cents(Decimal("10.25")) == 1025 and whole_cents(Decimal("10.255")) is None
    assert whole_cents(Decimal(2**53)) is None  # beyond a safe integer of cents
    assert ceil_to_cents(Decimal("0.001")) == Decimal("0.01")
    assert ceil_to_cents(Decimal("4.90")) == Decimal("4.90")


# -- the cap account


def test_a_cap_below_rmax_is_invalid() -> None:
    with pytest.raises(SpendError) as caught:
        CapAccount(Decimal("3.91"), RMAX)
    assert caught.value.code == "lookup_cap_invalid"


def test_the_total_counts_settled_retained_and_active_holds() -> None:
    account = CapAccount(Decimal("20"), RMAX)
    for name in ("a", "b", "c", "d"):
        assert account.admit(name, f"slot-{name}") is None
    account.settle("a", Decimal("0.50"))
    account.retain("b", "lost")  # the hold stays
    account.retain("c", "integrity_stop", partial=Decimal("5"))  # a larger partial
    # 0.50 + 3.92 + 5 + 3.92 (active d)
    assert account.total() == Decimal("13.34")
    assert account.stopped is None  # one lost slot (b): no repeated loss


def test_the_cap_refuses_the_admission_that_would_exceed_it() -> None:
    account = CapAccount(RMAX * 2 + Decimal("0.01"), RMAX)
    assert account.admit("a", "s") is None and account.admit("b", "s") is None
    assert account.admit("c", "s") == "not_admitted_cap"
    assert "c" not in account.holds  # a refusal leaves the account unchanged
    account.settle("a", Decimal("0.02"))  # T + Rmax = 0.02 + 7.84: one cent too many
    assert account.admit("c", "s") == "not_admitted_cap"
    account.settle("b", Decimal("0"))  # T + Rmax = 0.02 + 3.92 <= 7.85
    assert account.admit("c", "s") is None
    assert account.admit("c", "s") == "lookup_permit_reused"


def test_the_loss_count_is_of_slots() -> None:
    account = CapAccount(Decimal("100"), RMAX)
    account.admit("a1", "slot-a")
    account.retain("a1", "lost")  # slot-a ends lost
    account.admit("b1", "slot-b")
    account.settle("b1", Decimal("0.10"))  # slot-b goes on...
    assert account.refusal() is None
    account.admit("b2", "slot-b")
    account.retain("b2", "lost")  # ...and ends lost: two in a row
    assert account.stopped == "lookup_repeated_loss"


def test_an_own_latency_abort_neither_counts_nor_resets_the_streak() -> None:
    account = CapAccount(Decimal("100"), RMAX)
    account.admit("a1", "slot-a")
    account.retain("a1", "lost")  # one provider loss
    account.admit("b1", "slot-b")
    account.retain("b1", "own_abort_after_send")  # our own latency: not a loss
    assert account.stopped is None and account.loss_streak == 1
    assert account.total() == 2 * RMAX  # its hold is kept all the same
    account.admit("c1", "slot-c")  # slot-b ended: it did not reset the streak either
    assert account.loss_streak == 1
    account.retain("c1", "lost")  # the second provider loss in a row (b in between)
    assert account.stopped == "lookup_repeated_loss"


def test_a_slot_that_ends_otherwise_resets_the_count() -> None:
    account = CapAccount(Decimal("100"), RMAX)
    account.admit("a1", "slot-a")
    account.retain("a1", "lost")
    account.admit("b1", "slot-b")
    account.settle("b1", Decimal("0.10"))  # slot-b ends well: seen when slot-c starts
    assert account.refusal() is None  # a refused (unadmitted) slot would change nothing
    account.admit("c1", "slot-c")
    assert account.loss_streak == 0
    account.retain("c1", "lost")
    assert account.stopped is None and account.loss_streak == 1


def test_a_known_partial_above_the_hold_counts() -> None:
    account = CapAccount(Decimal("100"), RMAX)
    account.admit("a", "s")
    account.retain("a", "integrity_stop", partial=Decimal("4.50"))
    assert account.total() == Decimal("4.50")


def test_settling_twice_is_refused() -> None:
    account = CapAccount(Decimal("10"), RMAX)
    account.admit("a", "s")
    account.settle("a", Decimal("1"))
    with pytest.raises(SpendError) as caught:
        account.settle("a", Decimal("1"))
    assert caught.value.code == "lookup_permit_reused"


_KINDS = ("settled", "lost", "own_abort_after_send", "integrity_stop")


@settings(max_examples=200, deadline=None)
@given(
    cap_cents=st.integers(min_value=392, max_value=5_000),
    steps=st.lists(
        st.tuples(
            st.sampled_from(_KINDS),
            st.integers(min_value=0, max_value=392),  # a settled cost within the hold
            st.integers(min_value=0, max_value=3),  # how many requests stay in flight
        ),
        max_size=40,
    ),
)
def test_the_total_never_exceeds_the_cap(cap_cents: int, steps: list[tuple[str, int, int]]) -> None:
    cap = Decimal(cap_cents) / 100
    account = CapAccount(cap, RMAX)
    active: list[str] = []
    for index, (kind, cost_cents, in_flight) in enumerate(steps):
        if account.admit(f"r{index}", f"slot-{index // 2}") is None:
            active.append(f"r{index}")
        assert account.total() <= cap
        while len(active) > in_flight:
            request = active.pop(0)
            if kind == "settled":
                account.settle(request, Decimal(cost_cents) / 100)
            else:
                account.retain(request, kind)
                if kind == "integrity_stop":
                    account.stop("lookup_settlement_violation")
            assert account.total() <= cap
    if account.stopped is not None:
        assert account.admit("after", "slot") == account.stopped


# -- payload and H

_TOOL = {
    "type": "function",
    "name": "ConversationHistory",
    "parameters": {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "filters": {
                "type": "object",
                "properties": {"since": {"type": "string"}, "until": {"type": "string"}},
            },
            "tags": {"type": "array", "items": {"type": "object", "properties": {"k": {}}}},
        },
    },
}


def _payload(**more: Any) -> dict[str, Any]:
    return {
        "model": "gpt-6.1-sol",
        "input": [{"role": "user", "content": "hi"}],
        "tools": [_TOOL],
        "stream": True,
        **more,
    }


def test_schema_properties_count_recursively() -> None:
    # query, filters, since, until, tags, k
    assert schema_properties(_TOOL["parameters"]) == 6


def test_framing_follows_assumed_v1() -> None:
    reasoning = {"type": "reasoning", "encrypted_content": "x", "summary": []}
    payload = _payload(
        instructions="be brief", input=[{"role": "user", "content": "hi"}, reasoning]
    )
    # 4096 + 2 x 256 items + 1024 reasoning + 1024 tool + 6 x 256 properties + 4096
    assert framing(payload, ASSUMED_V1) == 4096 + 512 + 1024 + 1024 + 1536 + 4096
    body = json.dumps(payload).encode()
    admission = admission_size(payload, body, 700, ASSUMED_V1)
    assert admission.u == len(body) + 700 + framing(payload, ASSUMED_V1)


@pytest.mark.parametrize(
    ("payload", "where"),
    [
        (_payload(conversation="conv-1"), "payload.conversation"),
        (_payload(previous_response_id="r-1"), "payload.previous_response_id"),
        (_payload(truncation="auto"), "payload.truncation"),
        (_payload(prompt={"id": "p-1"}), "payload.prompt"),
        (_payload(background=True), "payload.background"),
        (_payload(metadata={"a": "b"}), "payload.metadata"),
        (
            _payload(
                input=[{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]
            ),
            "payload.input[0].content[0]",
        ),
        (
            _payload(input=[{"role": "user", "content": [{"type": "input_file", "file_id": "f"}]}]),
            "payload.input[0].content[0]",
        ),
        (_payload(input=[{"type": "item_reference", "id": "i"}]), "payload.input[0]"),
        (_payload(tools=[{"type": "web_search"}]), "payload.tools[0]"),
        (
            _payload(input=[{"type": "reasoning", "encrypted_content": "x", "summary": []}]),
            "payload.input[0]",
        ),
        (
            _payload(input=[{"role": "user", "content": "hi", "extra": 1}]),
            "payload.input[0].extra",
        ),
    ],
)
def test_a_payload_outside_the_allowlists_is_refused(payload: dict[str, Any], where: str) -> None:
    with pytest.raises(SpendError) as caught:
        check_payload(payload, first=True)
    assert caught.value.code == "lookup_payload_invalid"
    assert caught.value.location.startswith(where)
    assert caught.value.outcome == "refused_pre_send"


@pytest.mark.parametrize(
    "content",
    [None, [], [{"type": "reasoning_text", "text": "t"}]],
)
def test_replayed_reasoning_content_shapes_are_allowed_after_payload_one(content: Any) -> None:
    item: dict[str, Any] = {"type": "reasoning", "encrypted_content": "x", "summary": []}
    if content is not None:
        item["content"] = content
    check_payload(_payload(input=[{"role": "user", "content": "hi"}, item]), first=False)


@pytest.mark.parametrize(
    "content",
    [[{"type": "reasoning_text", "text": 1}], [{"type": "other"}], "text", [{}, {}]],
)
def test_other_reasoning_content_is_refused(content: Any) -> None:
    item = {"type": "reasoning", "encrypted_content": "x", "summary": [], "content": content}
    with pytest.raises(SpendError) as caught:
        check_payload(_payload(input=[item]), first=False)
    assert caught.value.code == "lookup_payload_invalid"


# -- raw usage and settlement


def _response(usage: Any, tier: Any = "default") -> dict[str, Any]:
    return {"status": "completed", "usage": usage, "service_tier": tier, "id": "r"}


def test_usage_records_keep_only_the_numeric_counts() -> None:
    raw = raw_settlement(
        _response(
            {
                "input_tokens": 10,
                "output_tokens": 4,
                "input_tokens_details": {"cached_tokens": 2, "note": "dropped"},
                "output_tokens_details": {"reasoning_tokens": 1},
                "secret": "never forwarded",
            }
        ),
        ASSUMED_V1,
    )
    assert raw.usage is not None
    encoded = msgspec.json.encode(raw.usage)
    assert b"secret" not in encoded and b"note" not in encoded
    assert msgspec.json.decode(encoded) == {
        "input": 10,
        "output": 4,
        "cache_read": 2,
        "reasoning": 1,
    }  # cache_write absent stays absent


def test_the_catalog_cost_counts_cache_classes_and_never_adds_reasoning_twice() -> None:
    raw = raw_settlement(
        _response(
            {
                "input_tokens": 1_000_000,
                "output_tokens": 1_000_000,
                "input_tokens_details": {"cached_tokens": 500_000},
                "output_tokens_details": {"reasoning_tokens": 900_000},
            },
            tier="flex",
        ),
        ASSUMED_V1,
    )
    assert raw.usage is not None
    # (500k x 2 + 500k x 0.1 + 1M x 10) / 1M x 0.5
    assert catalog_cost(raw.usage, "flex", ASSUMED_V1) == Decimal("5.525")


def test_a_settlement_breaking_an_implication_is_named() -> None:
    raw = raw_settlement(
        _response(
            {
                "input_tokens": 100,
                "output_tokens": 10,
                "input_tokens_details": {"cached_tokens": 200},  # more cached than input
            }
        ),
        ASSUMED_V1,
    )
    assert raw.usage is not None
    assert settlement_violation(
        raw.usage, u=1_000, cost=Decimal(0), hold=RMAX, assumptions=ASSUMED_V1
    )


# -- options and auxiliary callers


@pytest.mark.parametrize(
    ("options", "code"),
    [
        ({"transport": "sse", "max_retries": 0, "fetch": None}, "lookup_external_fetch_forbidden"),
        (
            {"transport": "sse", "max_retries": 0, "client": object()},
            "lookup_external_fetch_forbidden",
        ),
        (
            {"transport": httpx.AsyncHTTPTransport(), "max_retries": 0},
            "lookup_external_fetch_forbidden",
        ),
        ({"transport": "websocket", "max_retries": 0}, "lookup_option_forbidden"),
        ({"transport": "sse", "max_retries": 2}, "lookup_option_forbidden"),
        ({"transport": "sse", "max_retries": False}, "lookup_option_forbidden"),
        ({"transport": "sse"}, "lookup_option_forbidden"),
        (
            {"transport": "sse", "max_retries": 0, "retry_profile": "outage"},
            "lookup_option_forbidden",
        ),
        ({"transport": "sse", "max_retries": 0, "headers": {"x": "y"}}, "lookup_option_forbidden"),
        ({"transport": "sse", "max_retries": 0, "env": {"A": "1"}}, "lookup_option_forbidden"),
        ({"transport": "sse", "max_retries": 0, "model": "gpt-6-luna"}, "lookup_contract_mismatch"),
        ({"transport": "sse", "max_retries": 0, "session_id": "other"}, "lookup_cache_key_invalid"),
    ],
)
def test_options_refusals(options: dict[str, Any], code: str) -> None:
    with pytest.raises(SpendError) as caught:
        check_options(options, contract_for("http://127.0.0.1:9/v1"))
    assert caught.value.code == code and caught.value.outcome == "refused_pre_send"


def test_allowed_options_pass() -> None:
    contract = contract_for("http://127.0.0.1:9/v1")
    check_options(
        {
            "transport": "sse",
            "max_retries": 0,
            "headers": {},
            "env": None,
            "model": contract.model_id,
        },
        contract,
    )


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"judge": "gpt-6-luna"}, "judge"),
        ({"memory": True}, "memory"),
        ({"memory": None}, "memory"),  # unset is not explicitly off
        ({"subagents": True}, "subagents"),
        ({"upkeep": None}, "upkeep"),
        ({"compaction": True}, "compaction"),
        ({"output_schema": {"type": "object"}}, "output_schema"),
    ],
)
def test_auxiliary_callers_must_be_off(change: dict[str, Any], field: str) -> None:
    check_auxiliary_callers(CALLERS_OFF)
    with pytest.raises(SpendError) as caught:
        check_auxiliary_callers(msgspec.structs.replace(CALLERS_OFF, **change), where="child")
    assert caught.value.code == "lookup_auxiliary_caller_on"
    assert caught.value.location == f"child.{field}"


def test_a_guard_refuses_construction_with_an_auxiliary_caller_on(credentials: str) -> None:
    from continuity.spend.guard import GuardedProvider

    with pytest.raises(SpendError) as caught:
        GuardedProvider(
            contract=contract_for("http://127.0.0.1:9/v1"),
            permits=TestOnlyPermitSource(Decimal(10), RMAX),
            run_id="run-1",
            slot_id="slot-1",
            credentials_path=credentials,
            callers=AuxiliaryCallers(
                judge="gpt-6-luna",
                memory=False,
                subagents=False,
                upkeep=False,
                compaction=False,
                output_schema=None,
            ),
        )
    assert caught.value.code == "lookup_auxiliary_caller_on"


# -- the test-only permit source


@pytest.mark.anyio
async def test_the_source_rejects_stale_reused_and_mismatched_permits() -> None:
    source = TestOnlyPermitSource(Decimal("10"), RMAX)
    assert await source.admit("r1", "s", 1, "d1", Decimal("1")) == Refusal(
        "lookup_permit_rmax_mismatch", policy=True
    )
    permit = await source.admit("r1", "s", 1, "d1", RMAX)
    assert isinstance(permit, Permit)
    assert await source.admit("r1", "s", 1, "d1", RMAX) == Refusal(
        "lookup_permit_reused", policy=True
    )
    forged = msgspec.structs.replace(permit, epoch="epoch-0")
    cases = [
        (source.consume(forged, "d1"), "lookup_permit_stale"),
        (source.consume(permit, "d2"), "lookup_permit_digest_mismatch"),
    ]
    for call, code in cases:
        with pytest.raises(SpendError) as caught:
            await call
        assert caught.value.code == code and caught.value.outcome == "integrity_stop"
    await source.consume(permit, "d1")
    with pytest.raises(SpendError) as caught:
        await source.consume(permit, "d1")
    assert caught.value.code == "lookup_permit_reused"
    await source.settle(permit, Settlement(kind="integrity_stop", cost="5.10"), None, None)
    assert source.account.stopped == "lookup_integrity_stop"
    assert source.account.total() == Decimal("5.10")  # the known partial, above the hold
    with pytest.raises(SpendError) as caught:
        await source.settle(permit, Settlement(kind="lost"), None, None)
    assert caught.value.code == "lookup_permit_reused"


class _Real:
    brand = "durable-v1"
    test_only = False

    async def admit(self, *a: object) -> Refusal:
        return Refusal("x")

    async def consume(self, *a: object) -> None: ...

    async def settle(self, *a: object) -> None: ...

    async def stop(self, code: str) -> None: ...


def test_only_a_real_source_passes_the_real_source_assertion() -> None:
    real = _Real()
    assert assert_real_permit_source(real) is real
    for source, code in [
        (TestOnlyPermitSource(Decimal(10), RMAX), "lookup_permit_source_test_only"),
        (msgspec.structs, "lookup_permit_source_invalid"),
    ]:
        with pytest.raises(SpendError) as caught:
            assert_real_permit_source(source)
        assert caught.value.code == code
    disguised = _Real()
    disguised.brand = FAUX_BRAND
    with pytest.raises(SpendError) as caught:
        assert_real_permit_source(disguised)
    assert caught.value.code == "lookup_permit_source_test_only"


# -- the transport's URL check


@pytest.mark.anyio
async def test_a_fetch_to_another_url_stops_before_consume() -> None:
    sent: list[httpx.Request] = []

    async def send(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200)

    source = TestOnlyPermitSource(Decimal(10), RMAX)
    body = b'{"a": 1}'
    from continuity.spend.payload import body_digest

    permit = await source.admit("r1", "s", 1, body_digest(body), RMAX)
    assert isinstance(permit, Permit)
    transport = GuardTransport(send, source)
    transport.arm(Armed(permit, body_digest(body), "http://127.0.0.1:9/v1/responses", None))
    request = httpx.Request("POST", "http://127.0.0.1:9/v2/responses", content=body)
    with pytest.raises(SpendError) as caught:
        await transport.handle_async_request(request)
    assert caught.value.code == "lookup_url_mismatch"
    assert sent == [] and ("consume", "r1") not in source.log


# -- the frozen contract


def test_the_frozen_contract_is_the_lookup_reader_bindings() -> None:
    from continuity.lookup.reader import LOOKUP_BINDINGS
    from continuity.spend.contract import SOL_CONTRACT

    assert SOL_CONTRACT.model_id == LOOKUP_BINDINGS["default"][0]
    assert (SOL_CONTRACT.api, SOL_CONTRACT.effort) == ("openai-responses", "high")


@pytest.mark.parametrize(
    "change",
    [
        {"model": "gpt-6-luna"},
        {"provider": "openai"},
        {"api": "openai-chat"},
        {"effort": "low"},
        {"version": "lookup-guard-v0"},
        {"max_retries": 1},
        {"transport": "websocket"},
    ],
)
def test_a_contract_other_than_the_frozen_one_is_refused(change: dict[str, Any]) -> None:
    from continuity.spend.contract import check_contract

    contract = msgspec.structs.replace(contract_for("http://127.0.0.1:9/v1"), **change)
    with pytest.raises(SpendError) as caught:
        check_contract(contract, "run-1")
    assert caught.value.code == "lookup_contract_mismatch"
