"""The guarded provider against a scripted loopback Responses endpoint.

Every request goes over real HTTP to 127.0.0.1; the permit source is the test-only one.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import anyio
import msgspec
import pytest

from continuity.errors import ProviderError, SpendError
from continuity.messages import AssistantMessage, ModelRequest, ToolCallRequest, ToolResultMessage
from continuity.providers.protocol import Completed, complete
from continuity.spend.guard import GuardedProvider, classification
from continuity.spend.permits import Refusal, TestOnlyPermitSource
from tests.spend.conftest import RMAX, RUN_ID, Rig, request
from tests.spend.sse import Reply, completed, text_reply, tool_reply

pytestmark = pytest.mark.anyio


async def drain(
    guard: GuardedProvider, req: ModelRequest | None = None, **options: Any
) -> Completed:
    if options:
        options.setdefault("transport", "sse")
        options.setdefault("max_retries", 0)
        done = None
        async for event in guard.stream(req or request(), options):
            if isinstance(event, Completed):
                done = event
        assert done is not None
        return done
    return await complete(guard, req or request())


def second_round(first: Completed) -> ModelRequest:
    call = first.message.tool_calls[0]
    base = request()
    return msgspec.structs.replace(
        base,
        messages=(
            *base.messages,
            first.message,
            ToolResultMessage(call.call_id, call.name, '{"hits": []}'),
        ),
    )


async def test_a_settled_request_costs_the_catalog_price_at_its_tier(rig: Rig) -> None:
    rig.script(text_reply())
    guard = rig.guard()
    done = await drain(guard)
    assert done.message.text == "an answer"
    (record,) = guard.records
    assert record.outcome == "settled" and record.sent and guard.sends == 1
    # 1,000 uncached x 2 + 200 cached x 0.1 + 300 output x 10 = 5,020 per million, at 1x
    assert Decimal(record.cost or "") == Decimal("0.00502")
    assert rig.permits.account.total() == Decimal("0.00502")
    assert record.usage is not None and record.usage.reasoning == 100
    assert [op for op, _ in rig.permits.log] == ["admit", "consume", "settle"]


@pytest.mark.parametrize(("tier", "factor"), [("flex", "0.5"), ("priority", "2"), (None, "2")])
async def test_tiers_multiply_and_an_absent_tier_is_priced_at_twice(
    rig: Rig, tier: str | None, factor: str
) -> None:
    rig.script(Reply(events=completed(tier=tier, omit_tier=tier is None)))
    guard = rig.guard()
    await drain(guard)
    (record,) = guard.records
    assert Decimal(record.cost or "") == Decimal("0.00502") * Decimal(factor)
    assert record.tier == tier  # absent stays null in the record


async def test_an_unknown_tier_stops_and_is_recorded_as_null(rig: Rig) -> None:
    rig.script(text_reply(tier="scale"))
    guard = rig.guard()
    with pytest.raises(SpendError) as caught:
        await drain(guard)
    assert caught.value.code == "lookup_unknown_tier"
    assert caught.value.outcome == "integrity_stop"
    (record,) = guard.records
    assert record.tier is None and record.outcome == "integrity_stop"
    assert rig.permits.stops == ["lookup_unknown_tier"]
    assert rig.permits.account.total() == RMAX  # the hold is retained


async def test_a_failed_response_with_an_unknown_tier_stops_but_a_known_one_is_lost(
    rig: Rig,
) -> None:
    failed = {"type": "response.failed", "response": {"service_tier": "mystery", "error": {}}}
    rig.script(Reply(events=[failed]))
    with pytest.raises(SpendError) as caught:
        await drain(rig.guard())
    assert caught.value.code == "lookup_unknown_tier"
    rig.permits = TestOnlyPermitSource(Decimal("100.00"), RMAX)
    known = {"type": "response.failed", "response": {"service_tier": "default", "error": {}}}
    rig.script(Reply(events=[known]))
    guard = rig.guard(slot="slot-2")
    with pytest.raises(ProviderError):
        await drain(guard)
    assert guard.records[-1].outcome == "lost"
    assert guard.records[-1].code == "lookup_response_failed"
    assert rig.permits.stops == []


async def test_a_lost_stream_keeps_the_hold_and_makes_the_run_terminal(rig: Rig) -> None:
    rig.script(Reply(events=completed(), cut_after=1))
    guard = rig.guard()
    with pytest.raises(ProviderError) as caught:
        await drain(guard)
    assert caught.value.code == "provider_stream_interrupted"
    (record,) = guard.records
    assert record.outcome == "lost" and record.sent
    assert rig.permits.account.total() == RMAX
    sends = guard.sends
    with pytest.raises(SpendError) as later:
        await drain(guard)
    assert later.value.code == "lookup_slot_terminal"
    assert later.value.outcome == "refused_pre_send"
    assert guard.sends == sends and len(rig.permits.account.holds) == 1  # no new hold
    assert rig.permits.stops == []  # terminal, not a pilot stop


async def test_missing_usage_is_lost_not_settled(rig: Rig) -> None:
    rig.script(text_reply(omit_usage=True))
    guard = rig.guard()
    await drain(guard)
    assert guard.records[-1].outcome == "lost"
    assert guard.records[-1].code == "lookup_usage_missing"
    assert rig.permits.account.total() == RMAX


@pytest.mark.parametrize(
    "usage",
    [
        {"input_tokens": 0, "output_tokens": 5},
        {"input_tokens": -3, "output_tokens": 5},
        {"input_tokens": 10, "output_tokens": -1},
        {"input_tokens": 10.5, "output_tokens": 5},
        {"input_tokens": "10", "output_tokens": 5},
        {"output_tokens": 5},
    ],
)
async def test_only_integer_input_of_one_or_more_settles(rig: Rig, usage: dict[str, Any]) -> None:
    rig.script(text_reply(usage=usage))
    guard = rig.guard()
    with pytest.raises(SpendError) as caught:
        await drain(guard)
    assert caught.value.code == "lookup_invalid_usage"
    assert rig.permits.account.total() == RMAX


@pytest.mark.parametrize(
    ("usage", "violation"),
    [
        ({"input_tokens": 900_000, "output_tokens": 5}, "input"),
        ({"input_tokens": 100, "output_tokens": 128_001}, "output"),
        (
            {
                "input_tokens": 100,
                "output_tokens": 5,
                "output_tokens_details": {"reasoning_tokens": 6},
            },
            "reasoning",
        ),
        (
            {
                "input_tokens": 100,
                "output_tokens": 5,
                "input_tokens_details": {"cached_tokens": 101},
            },
            "cache",
        ),
    ],
)
async def test_a_settlement_that_breaks_an_assumption_is_a_sticky_stop(
    rig: Rig, usage: dict[str, Any], violation: str
) -> None:
    rig.script(text_reply(usage=usage), text_reply())
    guard = rig.guard()
    with pytest.raises(SpendError) as caught:
        await drain(guard)
    assert caught.value.code == "lookup_settlement_violation"
    assert violation in caught.value.message
    assert rig.permits.account.stopped == "lookup_settlement_violation"
    other = rig.guard(slot="slot-2")
    with pytest.raises(SpendError) as refused:
        await drain(other)
    assert refused.value.code == "lookup_settlement_violation"  # sticky at the source
    assert other.sends == 0


async def test_a_cost_above_the_hold_stops(rig: Rig) -> None:
    # 3.92 is the hold: 272,000 input at 2.5/M x2 already spends 1.36; 128,000 output
    # at priority adds 2.56; an input of exactly U with output 128,000 at 2x stays under.
    # Only a usage whose cost exceeds Rmax trips the check: input above U is caught
    # first, so the check is exercised directly on the arithmetic.
    from continuity.spend.assumptions import ASSUMED_V1
    from continuity.spend.usage import UsageRecord, settlement_violation

    usage = UsageRecord(input=10, output=5)
    assert settlement_violation(usage, 100, Decimal("3.93"), RMAX, ASSUMED_V1) is not None
    assert settlement_violation(usage, 100, RMAX, RMAX, ASSUMED_V1) is None
    assert rig.permits.account.total() == 0


async def test_two_rounds_add_the_first_output_to_the_second_admission(rig: Rig) -> None:
    rig.script(tool_reply(), text_reply())
    guard = rig.guard()
    first = await drain(guard)
    second = await drain(guard, second_round(first))
    assert second.message.text == "an answer"
    one, two = guard.records
    assert (one.round, two.round) == (1, 2)
    assert one.u is not None and two.u is not None and one.usage is not None
    body_one, body_two = (len(b) for _, b in rig.app.requests)
    # H: request + instructions slabs, 256 per input item, 1024 for the one tool and 256
    # per schema property, counted recursively (action, query, filters, filters.since).
    assert two.u - body_two - one.usage.output == 4096 + 4096 + 3 * 256 + 1024 + 4 * 256
    assert one.u - body_one == 4096 + 4096 + 256 + 1024 + 4 * 256


async def test_the_eleventh_request_refuses_before_any_hold(rig: Rig) -> None:
    rig.script(*[tool_reply(call_id=f"call-{n}") for n in range(10)])
    guard = rig.guard()
    current = request()
    for _ in range(10):
        done = await drain(guard, current)
        current = second_round(done)
    holds = len(rig.permits.account.holds)
    with pytest.raises(SpendError) as caught:
        await drain(guard, current)
    assert caught.value.code == "lookup_request_limit"
    assert len(rig.permits.account.holds) == holds == 10 and guard.sends == 10
    assert guard.records[-1].outcome == "refused_pre_send"


async def test_an_oversized_payload_is_not_admitted(rig: Rig) -> None:
    guard = rig.guard()
    huge = request("x" * 300_000)
    with pytest.raises(SpendError) as caught:
        await drain(guard, huge)
    assert caught.value.code == "not_admitted_input_envelope"
    assert rig.permits.log == [] and guard.sends == 0


async def test_the_cap_refuses_admission_without_a_send(rig: Rig) -> None:
    guard = rig.guard(permits=TestOnlyPermitSource(RMAX, RMAX))
    rig.script(tool_reply())
    first = await drain(guard)  # the one hold the cap allows, settled below Rmax
    full = TestOnlyPermitSource(RMAX, RMAX)
    full.account.admit("held", "slot-x")  # an active hold of Rmax fills the cap
    other = rig.guard(slot="slot-2", permits=full)
    with pytest.raises(SpendError) as caught:
        await drain(other)
    assert caught.value.code == "not_admitted_cap"
    assert caught.value.outcome == "refused_pre_send" and other.sends == 0
    assert first.message.tool_calls
    # a capacity refusal: nothing held, and the pilot continues
    assert full.stops == [] and full.account.stopped is None
    assert set(full.account.holds) == {"held"}


async def test_a_policy_refusal_stops_the_pilot(rig: Rig) -> None:
    class Refusing(TestOnlyPermitSource):
        async def admit(self, *args: Any, **kwargs: Any) -> Refusal:
            return Refusal("lookup_permit_stale", policy=True)

    source = Refusing(Decimal("10"), RMAX)
    guard = rig.guard(permits=source)
    with pytest.raises(SpendError) as caught:
        await drain(guard)
    assert caught.value.code == "lookup_permit_stale"
    assert source.stops == ["lookup_permit_stale"] and guard.sends == 0


async def test_a_second_concurrent_entry_never_sends(rig: Rig) -> None:
    rig.script(Reply(events=completed(), hang_after=1), text_reply())
    guard = rig.guard()
    errors: list[BaseException] = []

    async def run() -> None:
        try:
            await drain(guard)
        except BaseException as exc:
            errors.append(exc)

    with anyio.move_on_after(3):
        async with anyio.create_task_group() as group:
            group.start_soon(run)
            await anyio.sleep(0.3)
            group.start_soon(run)
            await anyio.sleep(0.3)
            group.cancel_scope.cancel()
    codes = [getattr(e, "code", None) for e in errors]
    assert "lookup_concurrent_entry" in codes
    assert guard.sends == 1 and len(rig.app.requests) == 1
    assert rig.permits.stops == ["lookup_concurrent_entry"]


async def test_the_transport_sends_at_most_once_per_permit_under_concurrent_entry(
    rig: Rig,
) -> None:
    import httpx

    from continuity.spend.payload import body_digest
    from continuity.spend.transport import Armed, GuardTransport

    sent: list[httpx.Request] = []
    gate = anyio.Event()

    async def send(req: httpx.Request) -> httpx.Response:
        sent.append(req)
        await gate.wait()
        return httpx.Response(200, content=b"")

    source = TestOnlyPermitSource(Decimal("10"), RMAX)
    body = b'{"model":"gpt-6.1-sol"}'
    permit = await source.admit("r:1", "slot-1", 1, body_digest(body), RMAX)
    assert not isinstance(permit, Refusal)
    transport = GuardTransport(send, source)
    transport.arm(Armed(permit, body_digest(body), "http://127.0.0.1:9/v1/responses", None))
    req = httpx.Request("POST", "http://127.0.0.1:9/v1/responses", content=body)
    outcomes: list[object] = []

    async def enter() -> None:
        try:
            outcomes.append(await transport.handle_async_request(req))
        except SpendError as exc:
            outcomes.append(exc.code)

    async with anyio.create_task_group() as group:
        for _ in range(5):
            group.start_soon(enter)
        await anyio.sleep(0.1)
        gate.set()
    assert len(sent) == 1 and transport.sends == 1 and transport.entries == 5
    assert outcomes.count("lookup_fetch_unadmitted") == 4
    assert source.stops[0] == "lookup_fetch_unadmitted"


async def test_a_body_that_differs_from_the_admission_is_refused_before_consume(rig: Rig) -> None:
    from continuity.spend import settle

    class Reserializing(settle.GuardedResponses):
        def stream_body(self, body: bytes, observe: Any = None, *, spend: Any = None) -> Any:
            changed = body.replace(b'"stream":true', b'"stream": true')
            return super().stream_body(changed, observe, spend=spend)

    guard = rig.guard()
    guard._client.__class__ = Reserializing
    with pytest.raises(SpendError) as caught:
        await drain(guard)
    assert caught.value.code == "lookup_body_mismatch"
    assert caught.value.outcome == "integrity_stop"
    assert ("consume", f"{RUN_ID}:slot-1:1") not in rig.permits.log
    assert guard.sends == 0 and rig.app.requests == []
    assert rig.permits.account.total() == RMAX  # admitted, never sent: the hold stays


async def test_an_unknown_header_stops_without_sending(rig: Rig) -> None:
    from continuity.spend import settle

    class Tagging(settle.GuardedResponses):
        def headers(self) -> dict[str, str]:
            return {**super().headers(), "x-debug-trace": "1"}

    guard = rig.guard()
    guard._client.__class__ = Tagging
    with pytest.raises(SpendError) as caught:
        await drain(guard)
    assert caught.value.code == "lookup_header_forbidden"
    assert guard.sends == 0 and rig.app.requests == []
    assert rig.permits.stops == ["lookup_header_forbidden"]


async def test_a_session_header_that_is_not_the_cache_key_stops_without_sending(
    rig: Rig,
) -> None:
    from continuity.spend import settle

    class Renaming(settle.GuardedResponses):
        def headers(self) -> dict[str, str]:
            return {**super().headers(), "session-id": "another-session"}

    guard = rig.guard(cache_key=f"continuity-{RUN_ID}-slot-1")
    guard._client.__class__ = Renaming
    with pytest.raises(SpendError) as caught:
        await drain(guard)
    assert caught.value.code == "lookup_prompt_cache_key_forbidden"
    assert caught.value.location == "fetch.headers.session-id"
    assert guard.sends == 0 and rig.app.requests == []
    assert rig.permits.stops == ["lookup_prompt_cache_key_forbidden"]


@pytest.mark.parametrize("header", ["session-id", "x-client-request-id"])
async def test_a_missing_cache_header_stops_without_sending(rig: Rig, header: str) -> None:
    from continuity.spend import settle

    class Dropping(settle.GuardedResponses):
        def headers(self) -> dict[str, str]:
            return {k: v for k, v in super().headers().items() if k != header}

    guard = rig.guard(cache_key=f"continuity-{RUN_ID}-slot-1")
    guard._client.__class__ = Dropping
    with pytest.raises(SpendError) as caught:
        await drain(guard)
    assert caught.value.code == "lookup_prompt_cache_key_forbidden"
    assert caught.value.location == f"fetch.headers.{header}"
    assert guard.sends == 0 and rig.app.requests == []


async def test_the_cache_key_binds_payload_and_headers(rig: Rig) -> None:
    key = f"continuity-{RUN_ID}-slot-1"
    rig.script(text_reply())
    guard = rig.guard(cache_key=key)
    await drain(guard)
    headers, body = rig.app.requests[0]
    assert headers["session-id"] == headers["x-client-request-id"] == key
    assert msgspec.json.decode(body)["prompt_cache_key"] == key
    assert set(headers) <= {
        "host",
        "content-length",
        "accept",
        "user-agent",
        "content-type",
        "authorization",
        "session-id",
        "x-client-request-id",
    }


async def test_a_cache_key_without_the_run_id_is_refused(rig: Rig) -> None:
    with pytest.raises(SpendError) as caught:
        rig.guard(cache_key="shared-key")
    assert caught.value.code == "lookup_cache_key_invalid"


async def test_a_payload_cache_key_without_a_declared_one_is_refused(rig: Rig) -> None:
    guard = rig.guard()

    def add_key(payload: dict[str, Any]) -> None:
        payload["prompt_cache_key"] = "anything"

    with pytest.raises(SpendError) as caught:
        await drain(guard, on_payload=add_key)
    assert caught.value.code == "lookup_prompt_cache_key_forbidden"
    assert rig.permits.log == []


@pytest.mark.parametrize(
    ("options", "code"),
    [
        ({"fetch": None}, "lookup_external_fetch_forbidden"),
        ({"http_transport": object()}, "lookup_external_fetch_forbidden"),
        ({"transport": None}, "lookup_external_fetch_forbidden"),
        ({"transport": "websocket"}, "lookup_option_forbidden"),
        ({"max_retries": 2}, "lookup_option_forbidden"),
        ({"retry_profile": "outage"}, "lookup_option_forbidden"),
        ({"temperature": 0.2}, "lookup_option_forbidden"),
        ({"headers": {"x-a": "1"}}, "lookup_option_forbidden"),
        ({"env": {"A": "1"}}, "lookup_option_forbidden"),
        ({"model": "openai:gpt-5"}, "lookup_contract_mismatch"),
        ({"session_id": "other"}, "lookup_cache_key_invalid"),
    ],
)
async def test_options_outside_the_allowlist_refuse_before_admission(
    rig: Rig, options: dict[str, Any], code: str
) -> None:
    guard = rig.guard()
    with pytest.raises(SpendError) as caught:
        await drain(guard, **options)
    assert caught.value.code == code
    assert rig.permits.log == [] and guard.sends == 0


@pytest.mark.parametrize("method", ["complete", "complete_simple", "handoff"])
async def test_only_the_streaming_call_dispatches(rig: Rig, method: str) -> None:
    guard = rig.guard()
    with pytest.raises(SpendError) as caught:
        await getattr(guard, method)(request())
    assert caught.value.code == "lookup_method_forbidden"
    assert classification(caught.value) == "failed/pilot_method_forbidden"
    assert rig.permits.log == [] and not hasattr(guard, "payload")


async def test_an_empty_reply_cannot_finalize(rig: Rig) -> None:
    rig.script(text_reply(text=""))
    guard = rig.guard()
    with pytest.raises(SpendError) as caught:
        await drain(guard)
    assert caught.value.code == "pilot_empty_final_output"
    assert classification(caught.value) == "failed/pilot_empty_final_output"
    assert guard.records[-1].outcome == "settled"  # spent, and settled
    with pytest.raises(SpendError) as later:
        await drain(guard)
    assert later.value.code == "pilot_empty_final_output"


async def test_a_length_terminal_reply_cannot_finalize(rig: Rig) -> None:
    rig.script(text_reply(kind="response.incomplete", incomplete_reason="max_output_tokens"))
    with pytest.raises(SpendError) as caught:
        await drain(rig.guard())
    assert caught.value.code == "pilot_empty_final_output"


async def test_an_own_abort_after_send_keeps_the_hold(rig: Rig) -> None:
    rig.script(Reply(events=completed(), hang_after=1))
    guard = rig.guard()
    with anyio.move_on_after(0.5):
        await drain(guard)
    (record,) = guard.records
    assert record.outcome == "own_abort_after_send" and record.sent
    assert record.code == "lookup_own_abort"
    assert rig.permits.account.total() == RMAX and rig.permits.stops == []
    with pytest.raises(SpendError) as later:
        await drain(guard)
    assert later.value.code == "lookup_slot_terminal"


async def test_an_admission_that_fails_stops_the_pilot(rig: Rig) -> None:
    class BrokenAdmit(TestOnlyPermitSource):
        async def admit(self, *args: Any, **kwargs: Any) -> Any:
            raise OSError("the controller did not answer")

    source = BrokenAdmit(Decimal("10"), RMAX)
    guard = rig.guard(permits=source)
    with pytest.raises(SpendError) as caught:
        await drain(guard)
    assert caught.value.code == "lookup_admit_failed"
    assert caught.value.outcome == "integrity_stop" and source.stops == ["lookup_admit_failed"]
    assert guard.sends == 0 and rig.app.requests == []


async def test_a_send_that_fails_after_consume_is_lost_with_its_hold(rig: Rig) -> None:
    import httpx

    async def broken(request: httpx.Request) -> httpx.Response:
        raise RuntimeError("the socket layer failed")

    guard = rig.guard(send=broken)
    with pytest.raises(RuntimeError, match="socket layer"):  # the cause, not swallowed
        await drain(guard)
    (record,) = guard.records
    assert record.outcome == "lost" and record.sent
    assert record.code == "lookup_request_failed"
    assert rig.permits.account.total() == RMAX  # the hold is retained
    with pytest.raises(SpendError) as later:
        await drain(guard)
    assert later.value.code == "lookup_slot_terminal"


async def test_two_consecutive_lost_slots_stop_admission(rig: Rig) -> None:
    rig.script(Reply(events=completed(), cut_after=1), Reply(events=completed(), cut_after=1))
    for slot in ("slot-1", "slot-2"):
        with pytest.raises(ProviderError):
            await drain(rig.guard(slot=slot))
    third = rig.guard(slot="slot-3")
    with pytest.raises(SpendError) as caught:
        await drain(third)
    assert caught.value.code == "lookup_repeated_loss"
    assert third.sends == 0


async def test_a_slot_that_settles_then_loses_is_a_lost_slot(rig: Rig) -> None:
    # slot-1 is lost; slot-2 settles its first request and loses its second: two
    # consecutive lost slots, whatever the settled request in between.
    rig.script(
        Reply(events=completed(), cut_after=1),
        tool_reply(),
        Reply(events=completed(), cut_after=1),
    )
    with pytest.raises(ProviderError):
        await drain(rig.guard(slot="slot-1"))
    second = rig.guard(slot="slot-2")
    first = await drain(second)
    with pytest.raises(ProviderError):
        await drain(second, second_round(first))
    third = rig.guard(slot="slot-3")
    with pytest.raises(SpendError) as caught:
        await drain(third)
    assert caught.value.code == "lookup_repeated_loss" and third.sends == 0


async def test_a_slot_that_ends_otherwise_resets_the_loss_count(rig: Rig) -> None:
    rig.script(
        Reply(events=completed(), cut_after=1), text_reply(), Reply(events=completed(), cut_after=1)
    )
    with pytest.raises(ProviderError):
        await drain(rig.guard(slot="slot-1"))
    await drain(rig.guard(slot="slot-2"))  # settled: the slot ends well
    with pytest.raises(ProviderError):
        await drain(rig.guard(slot="slot-3"))
    assert rig.permits.account.stopped is None
    assert rig.permits.account.loss_streak == 1


async def test_an_abort_after_admission_but_before_the_send_is_lost(rig: Rig) -> None:
    import httpx

    async def slow(request: httpx.Request) -> httpx.Response:  # never reached
        raise AssertionError("sent")

    class SlowAdmit(TestOnlyPermitSource):
        async def consume(self, permit: Any, body_digest: str) -> None:
            await anyio.sleep(5)  # the run's own deadline fires while consuming

    source = SlowAdmit(Decimal("10"), RMAX)
    guard = rig.guard(permits=source, send=slow)
    with anyio.move_on_after(0.3):
        await drain(guard)
    (record,) = guard.records
    assert record.outcome == "lost" and not record.sent and record.code == "lookup_own_abort"
    assert source.account.total() == RMAX and source.stops == []


async def test_a_consumer_that_stops_after_the_answer_settles_it_before_leaving(
    rig: Rig,
) -> None:
    rig.script(text_reply())
    guard = rig.guard()
    events = guard.stream(request(), {"transport": "sse", "max_retries": 0})
    async for event in events:
        if isinstance(event, Completed):
            break
    await events.aclose()  # in this task: no settlement is left to the collector
    (record,) = guard.records
    assert record.outcome == "settled" and Decimal(record.cost or "") == Decimal("0.00502")
    assert [op for op, _ in rig.permits.log] == ["admit", "consume", "settle"]


async def test_a_failed_stop_keeps_its_code_and_adds_lookup_stop_failed(rig: Rig) -> None:
    class BrokenStop(TestOnlyPermitSource):
        async def stop(self, code: str) -> None:
            raise OSError("the controller's pipe is closed")

    rig.script(text_reply(tier="mystery"))
    guard = rig.guard(permits=BrokenStop(Decimal("10"), RMAX))
    with pytest.raises(SpendError) as caught:
        await drain(guard)
    assert caught.value.code == "lookup_unknown_tier"
    assert caught.value.stop_code == "lookup_stop_failed"
    assert isinstance(caught.value.stop_cause, OSError)


async def test_a_failed_settlement_is_kept_as_the_settle_cause(rig: Rig) -> None:
    class BrokenSettle(TestOnlyPermitSource):
        async def settle(self, *args: Any, **kwargs: Any) -> None:
            raise OSError("the ledger is gone")

    rig.script(text_reply())
    source = BrokenSettle(Decimal("10"), RMAX)
    guard = rig.guard(permits=source)
    with pytest.raises(SpendError) as caught:
        await drain(guard)
    assert caught.value.code == "lookup_settle_failed"
    assert isinstance(caught.value.settle_cause, OSError)
    assert source.stops == ["lookup_settle_failed"]


async def test_opaque_reasoning_is_refused_in_the_first_payload(rig: Rig) -> None:
    def add_reasoning(payload: dict[str, Any]) -> None:
        payload["input"].insert(
            0, {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA"}
        )

    guard = rig.guard()
    with pytest.raises(SpendError) as caught:
        await drain(guard, on_payload=add_reasoning)
    assert caught.value.code == "lookup_payload_invalid"
    assert caught.value.location == "payload.input[0]"


async def test_replayed_reasoning_is_counted_in_later_rounds(rig: Rig) -> None:
    rig.script(tool_reply(), text_reply())
    guard = rig.guard()
    first = await drain(guard)

    def add_reasoning(payload: dict[str, Any]) -> None:
        payload["input"].insert(
            1,
            {
                "type": "reasoning",
                "id": "rs_1",
                "summary": [],
                "encrypted_content": "gAAAA",
                "content": [{"type": "reasoning_text", "text": "plan"}],
            },
        )

    await drain(guard, second_round(first), on_payload=add_reasoning)
    assert guard.records[-1].outcome == "settled"
    _, body = rig.app.requests[-1]
    assert b"gAAAA" in body


async def test_the_test_only_source_admits_nothing_once_stopped(rig: Rig) -> None:
    await rig.permits.stop("lookup_body_mismatch")
    guard = rig.guard()
    with pytest.raises(SpendError) as caught:
        await drain(guard)
    assert caught.value.code == "lookup_body_mismatch"
    assert guard.sends == 0


def test_assistant_message_type_is_what_the_guard_replays() -> None:
    # The second round replays the first reply's tool call as a function_call item.
    message = AssistantMessage(
        text="", tool_calls=(ToolCallRequest("c1", "ConversationHistory", {}),)
    )
    assert message.tool_calls[0].name == "ConversationHistory"


@pytest.mark.parametrize(
    ("status", "stop"),
    [
        (401, "lookup_account_refused"),
        (403, "lookup_account_refused"),
        (429, "lookup_rate_limited"),
    ],
)
async def test_the_endpoint_refusing_the_account_is_a_sticky_stop(
    rig: Rig, status: int, stop: str
) -> None:
    rig.script(Reply(status=status, events=[{"error": {"message": "no"}}]))
    with pytest.raises(ProviderError):
        await drain(rig.guard())
    assert rig.permits.stops == [stop]
    assert len(rig.app.requests) == 1  # one send, never retried
    # the stop is sticky: the next slot is refused before anything is sent
    with pytest.raises(SpendError) as caught:
        await drain(rig.guard(slot="slot-2"))
    assert caught.value.code == stop
    assert len(rig.app.requests) == 1


async def test_a_usage_limit_reported_in_the_stream_stops_the_pilot(rig: Rig) -> None:
    failed = {
        "type": "response.failed",
        "response": {"service_tier": "default", "error": {"code": "usage_limit_reached"}},
    }
    rig.script(Reply(events=[failed]))
    with pytest.raises((ProviderError, SpendError)):
        await drain(rig.guard())
    assert rig.permits.stops == ["lookup_usage_limit"]
    assert rig.permits.account.total() == RMAX  # the lost request keeps its hold


async def test_an_ordinary_failure_is_not_an_account_stop(rig: Rig) -> None:
    rig.script(Reply(events=completed(), cut_after=1))
    with pytest.raises(ProviderError):
        await drain(rig.guard())
    assert rig.permits.stops == []
