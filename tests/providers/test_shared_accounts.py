"""A real run's accounts in a shared store (`continuity.providers.shared_accounts`), on
both backends (a directory; moto's S3 server through the real s3fs): the cost-cap
account keeps the local SQLite account's rules figure for figure, holds from many
writers never pass the cap together, and the invocation ledger stops as the local one
does."""

from __future__ import annotations

import threading
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec
import pytest

from continuity.errors import AdmissionStopped, ContinuityError, ProviderError, RealModeError
from continuity.messages import ModelRequest, Usage, UserMessage
from continuity.providers.cache import Ledger
from continuity.providers.costcap import CostCap, HoldingAccount, RateCard, RateTier
from continuity.providers.shared_accounts import SharedCostCap, open_account, shared_ref
from continuity.providers.shared_ledger import SharedLedger, open_ledger
from continuity.store import Backend

pytest.importorskip("moto.server")

MODEL = "local:m"
CARD = RateCard(base=RateTier(input="1", output="2"))


@pytest.fixture(autouse=True)
def _boto_chain(monkeypatch: pytest.MonkeyPatch, s3_endpoint: str) -> None:
    """A shared ref names its store by URL alone: the bucket's credentials and server
    come from boto's own chain, as on a worker."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "loopback")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "loopback")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_endpoint)


def _ref(backend: Backend, name: str = "accounts/run.json") -> str:
    return shared_ref(backend.url, name)


def _request() -> ModelRequest:
    return ModelRequest(
        session_id="s", provider="p", model="m", system="s", messages=(UserMessage(text="hi"),)
    )


def _script(account: HoldingAccount) -> list[Any]:
    """One sequence of every operation; what each step left in the totals."""
    seen: list[Any] = []
    one = account.hold(MODEL, Decimal("0.25"))
    two = account.hold(MODEL, Decimal("0.125"))
    three = account.hold(MODEL, Decimal("0.0625"))
    seen.append(account.totals())
    account.close_hold(one, "settled", cost=Decimal("0.01"))
    account.close_hold(two, "released", reason="http 429")
    account.close_hold(three, "retained", reason="lost")
    account.close_hold(one, "retained")  # a closed hold is left as it is
    seen.append(account.totals())
    with pytest.raises(ProviderError) as over:
        account.hold(MODEL, Decimal("0.98"))
    seen.append(over.value.code)
    holds = account.call(MODEL, _request(), max_output=100)
    holds.before_send(b"x" * 50)
    holds.settle(Usage(input=10, cache_read=0, output=5))
    seen.append(account.totals())
    account.stop("cost_cap_assumption_broken: a test")
    with pytest.raises(ProviderError) as stopped:
        account.hold(MODEL, Decimal("0.01"))
    seen += [stopped.value.code, account.totals()]
    return seen


def test_the_shared_account_keeps_the_local_accounts_figures(
    backend: Backend, tmp_path: Path
) -> None:
    options: dict[str, Any] = {"cap": Decimal("1"), "rates": {MODEL: CARD}, "invocation": "i1"}
    local = CostCap.create(tmp_path / "cap.sqlite3", **options)
    shared = SharedCostCap.create(_ref(backend), **options)
    assert _script(shared) == _script(local)
    totals = shared.totals()
    assert (totals.settled_calls, totals.retained_calls, totals.released_attempts) == (2, 1, 1)
    document = backend.get("accounts/run.json")
    assert document is not None and not msgspec.json.decode(document[0])["holds"]  # all folded


def test_reopening_and_raising_the_cap_keep_the_local_accounts_figures(
    backend: Backend, tmp_path: Path
) -> None:
    """A killed invocation's active hold retained by the next one, a refused cap, a
    raised one: the same totals and the same codes as the local SQLite account."""

    def story(create: Callable[..., HoldingAccount]) -> list[Any]:
        seen: list[Any] = []
        first = create(cap=Decimal("1"), rates={MODEL: CARD}, invocation="i1")
        first.hold(MODEL, Decimal("0.5"))  # then i1 is killed, its hold active
        second = create(cap=None, rates={MODEL: CARD}, invocation="i2")
        totals = second.totals()
        seen.append(totals)
        with pytest.raises(RealModeError) as refused:
            create(cap=Decimal("2"), rates={}, invocation="i3")
        seen.append(refused.value.code)
        raised = create(cap=Decimal("2"), rates={}, invocation="i3", raise_cap=True)
        after = raised.totals()
        seen.append((after.cap, after.committed, after.retained_calls))
        seen.append([(c.old, c.new, c.invocation) for c in after.cap_changes])
        return seen

    local = story(lambda **options: CostCap.create(tmp_path / "cap.sqlite3", **options))
    assert story(lambda **options: SharedCostCap.create(_ref(backend), **options)) == local


def test_holds_from_many_writers_never_pass_the_cap_together(backend: Backend) -> None:
    """Eight writers, each with its own handle, hold $0.07 until refused: exactly
    floor(1 / 0.07) = 14 holds are admitted, whoever wins each round."""
    ref = _ref(backend)
    SharedCostCap.create(ref, cap=Decimal("1"), rates={MODEL: CARD}, invocation="i1")
    admitted: list[object] = []

    def writer() -> None:
        account = open_account(ref, "i1")
        while True:
            try:
                admitted.append(account.hold(MODEL, Decimal("0.07")))
            except ProviderError as exc:
                assert exc.code == "cost_cap_reached"
                return

    threads = [threading.Thread(target=writer) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(admitted) == 14 and len(set(admitted)) == 14
    assert Decimal(open_account(ref, "i1").totals().committed) == Decimal("0.98")


def test_a_new_invocation_retains_what_an_ended_one_left_active(backend: Backend) -> None:
    ref = _ref(backend)
    first = SharedCostCap.create(ref, cap=Decimal("1"), rates={MODEL: CARD}, invocation="i1")
    hold = first.hold(MODEL, Decimal("0.5"))  # then the invocation was killed
    second = SharedCostCap.create(ref, cap=None, rates={MODEL: CARD}, invocation="i2")
    totals = second.totals()
    assert (totals.retained, totals.active, totals.cap) == ("0.5", "0", "1")
    first.close_hold(hold, "settled", cost=Decimal("0.1"))  # its own settlement replaces it
    assert second.totals().committed == "0.1"
    own = second.hold(MODEL, Decimal("0.25"))
    second.close_hold(own, "retained", reason="lost")  # its own: final, and folded
    second.close_hold(own, "settled", cost=Decimal("0.01"))
    assert (second.totals().committed, second.totals().retained_calls) == ("0.35", 1)


def test_another_cap_needs_raise_cap_and_the_change_is_recorded(backend: Backend) -> None:
    ref = _ref(backend)
    SharedCostCap.create(ref, cap=Decimal("1"), rates={}, invocation="i1")
    with pytest.raises(RealModeError) as caught:
        SharedCostCap.create(ref, cap=Decimal("2"), rates={}, invocation="i2")
    assert caught.value.code == "cost_cap_mismatch" and caught.value.location == "--cost-cap"
    raised = SharedCostCap.create(ref, cap=Decimal("2"), rates={}, invocation="i2", raise_cap=True)
    (change,) = raised.totals().cap_changes
    assert (change.old, change.new, change.invocation) == ("1", "2", "i2")


def test_a_missing_unreadable_or_unreachable_account_is_typed(
    backend: Backend, tmp_path: Path
) -> None:
    with pytest.raises(ProviderError) as missing:
        open_account(_ref(backend), "i1")
    assert missing.value.code == "cost_cap_account_invalid"
    backend.create("accounts/bad.json", b"{not json")
    with pytest.raises(ProviderError) as unreadable:
        SharedCostCap(_ref(backend, "accounts/bad.json"), "i1").hold(MODEL, Decimal(1))
    assert unreadable.value.code == "cost_cap_account_invalid"
    account = SharedCostCap.create(_ref(backend), cap=None, rates={}, invocation="i1")
    with pytest.raises(ProviderError) as unknown:
        account.card("local:other")
    assert unknown.value.code == "cost_cap_price_unknown"
    gone = shared_ref("s3://no-such-bucket/x", "accounts/a.json")
    with pytest.raises(ProviderError) as failed:
        open_account(gone, "i1")
    assert failed.value.code == "cost_cap_account_failed"
    local = tmp_path / "cap.sqlite3"
    CostCap.create(local, cap=None, rates={}, invocation="i1").close()
    assert isinstance(open_account(str(local), "i1"), CostCap)  # a path: the local file


def test_the_shared_ledger_stops_as_the_local_one_does(backend: Backend, tmp_path: Path) -> None:
    ref = _ref(backend, "accounts/ledger.json")
    shared = SharedLedger.create(ref, planned_live_turns=2, max_observed_input_tokens=100)
    local = Ledger.create(
        tmp_path / "l.sqlite3", planned_live_turns=2, max_observed_input_tokens=100
    )
    for ledger in (shared, local):
        ledger.admit()
        ledger.admit()
        with pytest.raises(AdmissionStopped):
            ledger.admit()  # the planned live turns were admitted
        ledger.observe(Usage(input=150, cache_read=0, output=1))
    assert shared.state() == local.state()
    assert isinstance(open_ledger(ref), SharedLedger)
    fresh = SharedLedger.create(ref, planned_live_turns=5, max_observed_input_tokens=10)
    fresh.observe(Usage(input=11, cache_read=0, output=1))
    with pytest.raises(ContinuityError) as stopped:
        open_ledger(ref).check_open()
    assert stopped.value.code == "admission_stopped" and "crossed" in stopped.value.message
