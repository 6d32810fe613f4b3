"""A real-domain pilot: each probe child mints the real send (`continuity.spend.real_send`)
from the controller's grant and every guarded request must name the approved account.

Fictional credentials (a JWT naming a fictional account), a test-written authorization
of a registered pilot whose R0 and Rpack builds are one export of this package
(`tests.spend.registered_pilot`: the children run it, ``PYTHONPATH`` pointing at it and
this interpreter as the build's), a synthetic home for the burn registry (only the home
lookup is redirected), the real controller, real probe children and the loopback wire
server. CI and debug variables are removed for the children, as on an owner's machine;
one test puts CI back."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any, ClassVar

import msgspec
import pytest

from continuity.errors import SpendError
from continuity.servers.wire import WireServer
from continuity.spend import consumption
from continuity.spend.assumptions import Rates, catalog_bounded
from continuity.spend.consumption import REAL_DOMAIN
from continuity.spend.controller import PilotConfig, PilotSlot, run_pilot
from tests.spend.registered_pilot import export, register
from tests.spend.test_authorization import _authorization, _jwt
from tests.spend.test_controller import Pilot, slots

MODEL = "gpt-6.1-sol"


def built_slots() -> tuple[PilotSlot, ...]:
    """`slots` under the registered build's interpreter (this one): both children of a
    slot then run the environment as given, whose ``PYTHONPATH`` is the build's export."""
    return tuple(msgspec.structs.replace(s, python=sys.executable) for s in slots())


class RealPilot(Pilot):
    """`Pilot`'s layout with a real-domain consumption of a registered pilot's
    authorization and JWT credentials."""

    REGISTRATION: ClassVar[dict[str, Any]] = {}

    def registered(self, tmp_path: Path, account: str = "acct-1") -> None:
        credentials = tmp_path / "credentials.json"
        self.src = export(tmp_path / "build", package=True)
        self.pilot = register(tmp_path, self.src, **self.REGISTRATION)
        self.bindings = self.pilot.bindings(credentials)
        self.raw = _authorization(credentials, account=account, bindings=self.bindings)

    def __init__(self, tmp_path: Path) -> None:
        self.registered(tmp_path)
        super().__init__(
            tmp_path,
            domain=REAL_DOMAIN,
            credentials=json.dumps({"api_key": _jwt("acct-1", "one")}),
            authorization=("auth-0001", hashlib.sha256(self.raw).hexdigest()),
        )

    def account(self, account: str, nonce: str = "one") -> None:
        self.credentials.write_text(json.dumps({"api_key": _jwt(account, nonce)}))

    def config(self, urls: tuple[str, str], **more: Any) -> PilotConfig:
        granted = {
            "authorization": self.raw,
            "bindings": self.bindings,
            "registration": str(self.pilot.path),
            "slots": built_slots(),
        }
        return super().config(urls, **{**granted, **more})


def _owner_machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make: type[RealPilot]) -> Any:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    monkeypatch.setattr(consumption, "_home", lambda: home)  # only the home lookup
    for name in ("CI", "CONTINUITY_DEBUG"):  # the children inherit this environment
        monkeypatch.delenv(name, raising=False)
    made = make(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(made.src))  # the children import the build
    yield made
    made.lease.release()


@pytest.fixture
def real(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    yield from _owner_machine(tmp_path, monkeypatch, RealPilot)


def test_real_children_mint_the_real_send_and_name_the_approved_account(
    real: RealPilot,
) -> None:
    app = WireServer(model=MODEL)
    with real.serve(app) as urls:
        report = run_pilot(real.config(urls), real.lease, real.claim)
    assert report.stop is None
    assert [r.terminal for r in report.receipts] == ["completed"] * 4
    # the real send refuses a request without the committed account header, so every
    # settled request carried it: two guarded rounds a slot, all settled
    assert [state for _, state, _ in real.holds()] == ["settled"] * 8
    assert app.count() == 8
    text = (real.root / "report.json").read_text()
    assert "acct-1" not in text and str(real.credentials) not in text


def test_a_rotated_token_of_the_same_account_still_mints(real: RealPilot) -> None:
    real.account("acct-1", nonce="rotated")
    app = WireServer(model=MODEL)
    with real.serve(app) as urls:
        report = run_pilot(real.config(urls), real.lease, real.claim)
    assert report.stop is None and report.counts.completed == 4


@pytest.mark.parametrize("change", ["another account", "CI set"])
def test_a_child_that_cannot_mint_never_reaches_the_endpoint(
    real: RealPilot, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    if change == "CI set":
        monkeypatch.setenv("CI", "")  # even empty: the child's own check refuses
    else:
        real.account("acct-2")  # substituted after the consumption
    app = WireServer(model=MODEL)
    with real.serve(app) as urls:
        report = run_pilot(real.config(urls), real.lease, real.claim)
    assert app.count() == 0 and real.holds() == []
    assert report.stop is not None and report.counts.admitted == 0
    assert report.counts.visited == 1  # the first child's refusal stops the run
    assert Path(real.root / "canaries").exists() is False  # refused before its canary


@pytest.mark.parametrize("change", ["the controller's code", "another plan"])
def test_a_child_that_is_not_the_registered_one_never_reaches_the_endpoint(
    real: RealPilot, change: str
) -> None:
    """The factory's own checks, in real children: a child running the controller's
    code rather than the registered build (``lookup_build_mismatch``), or one told to
    run another effort than the authorized one (``lookup_plan_mismatch``), mints
    nothing, and nothing is admitted or sent."""
    more: dict[str, Any] = {"slots": slots()} if change == "the controller's code" else {}
    if change == "another plan":
        more["effort"] = "low"
    app = WireServer(model=MODEL)
    with real.serve(app) as urls:
        report = run_pilot(real.config(urls, **more), real.lease, real.claim)
    assert app.count() == 0 and real.holds() == []
    assert report.stop is not None and report.counts.admitted == 0
    assert report.counts.visited == 1  # the first child's refusal stops the run
    assert Path(real.root / "canaries").exists() is False  # refused before its canary


def test_a_real_claim_without_its_authorization_never_launches(real: RealPilot) -> None:
    config = real.config(("http://127.0.0.1:9/v1", "http://127.0.0.1:9/mcp"))
    for missing in ({"authorization": None}, {"bindings": None}, {"registration": None}):
        with pytest.raises(SpendError) as caught:
            run_pilot(PilotConfig(**{**_fields(config), **missing}), real.lease, real.claim)
        assert caught.value.code == "lookup_authorization_invalid"
    assert not (real.root / "controller-journal.jsonl").exists()


def _fields(config: PilotConfig) -> dict[str, Any]:
    return {name: getattr(config, name) for name in config.__struct_fields__}


class VendorPilot(RealPilot):
    """A catalog-bounded reader on OpenAI's API: an API key and a project id, the
    project named in ``openai-project``, the registered output cap sent every time."""

    REGISTRY = catalog_bounded(
        "openai:gpt-test",
        rates=Rates(input="1.25", output="10", cache_read="0.125", cache_write="1.25"),
        context_window=400_000,
        output_cap=32_000,
    )
    REGISTRATION: ClassVar[dict[str, Any]] = {"registry": REGISTRY, "effort": "low"}

    def __init__(self, tmp_path: Path) -> None:
        self.registered(tmp_path, account="proj_a")
        Pilot.__init__(
            self,
            tmp_path,
            domain=REAL_DOMAIN,
            credentials=json.dumps({"api_key": "sk-fictional", "account_id": "proj_a"}),
            authorization=("auth-0001", hashlib.sha256(self.raw).hexdigest()),
        )

    def account(self, account: str, nonce: str = "one") -> None:
        self.credentials.write_text(json.dumps({"api_key": "sk-fictional", "account_id": account}))

    def config(self, urls: tuple[str, str], **more: Any) -> PilotConfig:
        vendor = {"assumptions": self.REGISTRY, "effort": "low"}
        return super().config(urls, **{**vendor, **more})


@pytest.fixture
def vendor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    yield from _owner_machine(tmp_path, monkeypatch, VendorPilot)


def test_a_vendor_readers_children_name_the_project_and_send_its_output_cap(
    vendor: VendorPilot,
) -> None:
    app = WireServer(model="gpt-test")
    with vendor.serve(app) as urls:
        report = run_pilot(vendor.config(urls), vendor.lease, vendor.claim)
    assert report.stop is None and report.counts.completed == 4
    bodies = [body for _, body in app.calls]
    assert len(bodies) == 8 and {b["max_output_tokens"] for b in bodies} == {32_000}
    assert {b["model"] for b in bodies} == {"gpt-test"}
    assert [state for _, state, _ in vendor.holds()] == ["settled"] * 8


def test_a_vendor_child_whose_project_changed_never_sends(vendor: VendorPilot) -> None:
    vendor.account("proj_b")  # after the consumption: the child's own check refuses
    app = WireServer(model="gpt-test")
    with vendor.serve(app) as urls:
        report = run_pilot(vendor.config(urls), vendor.lease, vendor.claim)
    assert app.count() == 0 and vendor.holds() == [] and report.counts.admitted == 0
