"""`doit compare_pilot`'s route: a real-domain pilot from a pilot registration.

The toy pilot registration (`tests.roles.pilot_toy`) over a frozen holdout in a real
store; its sizing's feasible slots become the controller's slots, each boundary is
crossed by the real preparation child over a checkpoint replayed offline, each
conversation's retained records are served over MCP on loopback, and the probe
children mint the real send. Both registered builds are one export of this package
(`tests.spend.registered_pilot.with_builds`), which the children run (``PYTHONPATH``
pointing at it, this interpreter as the build's), so the real-send factory's own checks
of the registered code, role, build and plan hold. The endpoint is the loopback wire
server; the burn registry's home is redirected (only the home lookup); the authorization
is written by the test over the bindings the route computes, as an owner would write
it."""

from __future__ import annotations

import hashlib
import json
from decimal import Decimal
from typing import Any

import msgspec
import pytest

from continuity.errors import ContinuityError, RoleError, SpendError
from continuity.roles.pilot import run as pilot_run
from continuity.roles.pilot.registration import read_pilot
from continuity.roles.pilot.run import (
    PilotRequest,
    check_ready,
    run_compare_pilot,
    run_registered,
)
from continuity.roles.pilot.slots import pilot_bindings
from continuity.servers.wire import WireServer, serve_in_thread
from continuity.spend import consumption, gate
from continuity.spend.authorization import Authorization, Bindings, account_commitment
from continuity.spend.consumption import REAL_DOMAIN
from continuity.store import Store
from tests.roles.pilot_toy import (  # noqa: F401 (fixtures)
    VENDOR_READER,
    PilotToy,
    pilot_toy,
    registered,
    vendor_toy,
)
from tests.spend.registered_pilot import export, with_builds
from tests.spend.test_authorization import SALT, _jwt

SOL = "gpt-6.1-sol"


class Route:
    def __init__(self, toy: PilotToy, account: str = "acct-1", **credentials: str) -> None:
        self.toy, self.account = toy, account
        # the toy's checkouts are placeholders at revision 0...0; its builds export this code
        self.src = export(toy.root / "pilot-build", package=True, revision="0" * 40)
        toy.sha256 = with_builds(toy.registration, self.src)
        done = registered(toy)
        self.pilot, self.sha256 = done.path, done.sha256
        self.credentials = toy.root / "credentials.json"
        given = credentials or {"api_key": _jwt(account, "one")}
        self.credentials.write_text(json.dumps(given))
        self.output = toy.root / "pilot-out"
        self.authorization = toy.root / "authorization.json"

    def request(self, endpoint: str = "http://127.0.0.1:9/v1", **more: Any) -> PilotRequest:
        values: dict[str, Any] = {
            "registration": self.pilot,
            "sha256": self.sha256,
            "authorization": self.authorization,
            "output": self.output,
            "credentials": self.credentials,
            "pricing": self.toy.catalog,
            "endpoint": endpoint,
        }
        values.update(more)
        return PilotRequest(**values)

    def authorize(self, **change: Any) -> None:
        verified = read_pilot(self.pilot, self.sha256, pricing=self.toy.catalog)
        bindings = pilot_bindings(
            verified, self.output, self.credentials.resolve(), pilot_run._revision()
        )
        value = Authorization(
            schema=REAL_DOMAIN,
            id="auth-pilot-1",
            bindings=msgspec.structs.replace(bindings, **change),
            salt=SALT,
            account_commitment=account_commitment(SALT, self.account),
            issued_at="2026-12-02T09:00:00+00:00",
            approver="owner",
            approval_reference="2500",
        )
        self.authorization.write_bytes(msgspec.json.encode(value))

    def run(self, app: WireServer) -> Any:
        verified = read_pilot(self.pilot, self.sha256, pricing=self.toy.catalog)
        with serve_in_thread(app) as url:
            return run_registered(self.toy.store, self.request(url + "/v1"), verified)


def _owner_machine(toy: PilotToy, monkeypatch: pytest.MonkeyPatch) -> None:
    home = toy.root / "home"
    home.mkdir(mode=0o700)
    monkeypatch.setattr(consumption, "_home", lambda: home)  # only the home lookup
    for name in ("CI", "CONTINUITY_DEBUG"):  # an owner's machine: the children inherit it
        monkeypatch.delenv(name, raising=False)


def _builds_imported(made: Route, monkeypatch: pytest.MonkeyPatch) -> Route:
    monkeypatch.setenv("PYTHONPATH", str(made.src))  # the children import the build
    return made


@pytest.fixture
def route(pilot_toy: PilotToy, monkeypatch: pytest.MonkeyPatch) -> Route:  # noqa: F811
    _owner_machine(pilot_toy, monkeypatch)
    return _builds_imported(Route(pilot_toy), monkeypatch)


@pytest.fixture
def vendor(vendor_toy: PilotToy, monkeypatch: pytest.MonkeyPatch) -> Route:  # noqa: F811
    _owner_machine(vendor_toy, monkeypatch)
    made = Route(vendor_toy, "proj_fictional", api_key="sk-fictional", account_id="proj_fictional")
    return _builds_imported(made, monkeypatch)


def test_a_registered_pilot_runs_its_slots_over_real_checkpoints(route: Route) -> None:
    route.authorize()
    app = WireServer(model=SOL)
    report = route.run(app)
    assert report.stop is None, report
    # the toy sizing's three feasible slots (the context-bound one is not planned)
    assert report.counts.planned == 3 and report.counts.completed == 3
    assert [r.slot_id for r in report.receipts] == ["s000-pack", "s001-pack", "s002-pack"]
    assert all(r.admitted_requests == 2 for r in report.receipts)  # history, then answer
    # the boundary was crossed over the real checkpoint: the pack the pack-cold reseed
    # injects comes first, the conversation's turns follow, the probe turn is last
    first, second = app.calls[0][1], app.calls[1][1]
    assert first["input"][0]["content"].startswith("<continuity-pack v1>")
    assert "never came up" in first["input"][-1]["content"]  # the probe's answer format
    assert "answer UNKNOWN rather than guess" in first["instructions"]  # the role's soul
    # the history call was answered over MCP by the slot's ConversationHistory
    (output,) = [i for i in second["input"] if i.get("type") == "function_call_output"]
    assert "hits" in json.loads(output["output"])
    # the burn registry holds the id; the root holds the marker and the receipts
    digest = hashlib.sha256(route.authorization.read_bytes()).hexdigest()
    marker = json.loads((route.output / "authorization-consumed.json").read_text())
    assert marker["raw_sha256"] == digest and marker["domain"] == REAL_DOMAIN
    text = (route.output / "report.json").read_text()
    assert str(route.credentials) not in text and "acct-1" not in text


def test_an_authorization_for_another_pilot_is_refused_before_consumption(
    route: Route,
) -> None:
    route.authorize(descriptor="0" * 64)
    with pytest.raises(SpendError) as caught:
        route.run(WireServer(model=SOL))
    assert caught.value.code == "lookup_authorization_mismatch"
    assert not (route.output / "authorization-consumed.json").exists()


def test_an_unreadable_authorization_is_coded(route: Route) -> None:
    with pytest.raises(SpendError) as caught:
        route.run(WireServer(model=SOL))  # never written
    assert caught.value.code == "lookup_authorization_invalid"
    route.authorization.symlink_to(route.credentials)
    with pytest.raises(SpendError) as caught:
        route.run(WireServer(model=SOL))  # a link is never followed
    assert caught.value.code == "lookup_authorization_invalid"


def test_an_existing_output_root_is_refused(route: Route) -> None:
    route.authorize()
    route.output.mkdir()
    with pytest.raises(RoleError) as caught:
        route.run(WireServer(model=SOL))
    assert caught.value.code == "role_output_exists"


def test_the_closed_gate_refuses_before_reading_anything(
    route: Route, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gate, "LOOKUP_PILOT_REAL_ROUTE_ENABLED", False)
    request = route.request(registration=route.toy.root / "missing.json")
    with pytest.raises(SpendError) as caught:
        run_compare_pilot(route.toy.store, request)
    assert caught.value.code == "lookup_pilot_real_route_unavailable"


def test_sol_whose_backend_takes_no_output_cap_is_refused(route: Route) -> None:
    route.authorize()
    with pytest.raises(RoleError) as caught:
        run_compare_pilot(route.toy.store, route.request())
    assert caught.value.code == "lookup_pilot_reader_not_ready"
    assert "output_cap" in caught.value.location
    assert not route.output.exists()


def test_a_vendor_reader_runs_the_open_route(vendor: Route) -> None:
    """The gate open, a catalog-bounded reader: readiness, the authorization, the real
    checkpoints and the real send, every request naming the project in openai-project
    and asking for at most the registered output cap. (The controller-checkout step is
    `tests/roles/test_pilot_controller.py`'s: the toy's checkouts are placeholders.)"""
    vendor.authorize()
    verified = read_pilot(vendor.pilot, vendor.sha256, pricing=vendor.toy.catalog)
    check_ready(verified)  # an enforced output cap, a known envelope, known prices
    # The same reader, once its endpoint was seen to write past its cap, is not ready.
    with pytest.raises(RoleError) as unenforced:
        check_ready(verified, "2026-12-04: wrote past a 16-token cap")
    assert unenforced.value.code == "lookup_pilot_reader_not_ready"
    assert "output_cap" in unenforced.value.location
    before = vendor.credentials.stat()
    content = vendor.credentials.read_bytes()
    app = WireServer(model=VENDOR_READER.partition(":")[2])
    with serve_in_thread(app) as url:
        report = run_registered(vendor.toy.store, vendor.request(url + "/v1"), verified)
    # validate, consume, verify and every send read the credentials; none changed them
    after = vendor.credentials.stat()
    assert vendor.credentials.read_bytes() == content
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert report.stop is None and report.counts.completed == 3
    registry = verified.pilot.descriptor.assumptions
    assert registry.version == "catalog-bounded-v1" and registry.rmax == "3.56"
    bodies = [body for _, body in app.calls]
    assert {b["model"] for b in bodies} == {"gpt-test"}
    assert {b["max_output_tokens"] for b in bodies} == {registry.max_output}
    assert Decimal(report.total) <= Decimal(report.cap)


def test_the_open_route_refuses_a_controller_that_is_not_the_registered_r0(
    vendor: Route,
) -> None:
    vendor.authorize()
    with pytest.raises(RoleError) as caught:
        run_compare_pilot(vendor.toy.store, vendor.request())
    assert caught.value.code == "lookup_pilot_controller_invalid"
    assert not vendor.output.exists()


def test_credentials_for_another_project_are_refused_before_consumption(
    vendor: Route,
) -> None:
    vendor.authorize()
    vendor.credentials.write_text(
        json.dumps({"api_key": "sk-fictional", "account_id": "proj_other"})
    )
    verified = read_pilot(vendor.pilot, vendor.sha256, pricing=vendor.toy.catalog)
    app = WireServer(model="gpt-test")
    with serve_in_thread(app) as url, pytest.raises(SpendError) as caught:
        run_registered(vendor.toy.store, vendor.request(url + "/v1"), verified)
    assert caught.value.code == "lookup_account_substituted" and app.count() == 0
    assert not (vendor.output / "authorization-consumed.json").exists()


def test_show_bindings_prints_what_the_route_validates_and_touches_nothing(
    vendor: Route,
) -> None:
    from continuity.commands.pilot_runs import ComparePilotRequest, compare_pilot

    printed = compare_pilot(
        ComparePilotRequest(
            registration=str(vendor.pilot),
            sha256=vendor.sha256,
            output=str(vendor.output),
            credentials=str(vendor.credentials),
            pricing=str(vendor.toy.catalog),
            show_bindings=True,
        )
    )
    assert not vendor.output.exists() and not vendor.authorization.exists()
    shown = msgspec.json.decode(printed.encode(), type=Bindings)
    verified = read_pilot(vendor.pilot, vendor.sha256, pricing=vendor.toy.catalog)
    expected = pilot_bindings(
        verified, vendor.output, vendor.credentials.resolve(), pilot_run._revision()
    )
    assert shown == expected and shown.effort == "low"  # the vendor reader's own effort


def test_a_failed_preparation_consumes_nothing_and_makes_no_output(route: Route) -> None:
    route.authorize()
    verified = read_pilot(route.pilot, route.sha256, pricing=route.toy.catalog)
    empty = Store(route.toy.root / "empty-store")  # the frozen holdout is not there
    with pytest.raises(ContinuityError) as caught:
        run_registered(empty, route.request(), verified)
    assert caught.value.code == "holdout_not_frozen"
    assert not route.output.exists()  # the authorization stays usable
