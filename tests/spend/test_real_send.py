"""The real-send factory: every check before it mints, the PID binding and the account
header on every send. Fictional credentials and authorizations, a synthetic home, a
real forked child whose parent is the consuming controller, and loopback HTTP only."""

from __future__ import annotations

import hashlib
import multiprocessing
import os
from pathlib import Path
from typing import Any

import anyio
import httpx
import msgspec
import pytest

from continuity.errors import SpendError
from continuity.servers.wire import WireServer, serve_in_thread
from continuity.spend import consumption
from continuity.spend.consumption import CONSUMED_MARKER, REAL_DOMAIN, Claim, consume
from continuity.spend.lease import Lease, acquire_lease
from continuity.spend.preparation import Prepared
from continuity.spend.real_send import ACCOUNT_HEADER, mint_real_send
from tests.spend.test_authorization import _authorization, _bindings, _credentials
from tests.spend.test_preparation import prepare


class Setup:
    def __init__(self, tmp_path: Path) -> None:
        self.credentials = _credentials(tmp_path / "auth.json", "acct-1")
        self.raw = _authorization(self.credentials)
        self.root = tmp_path / "runs" / "out"
        self.root.mkdir(parents=True, mode=0o700)
        self.lease: Lease = acquire_lease(self.root)
        self.claim: Claim = consume(
            domain=REAL_DOMAIN,
            authorization_id="auth-0001",
            raw_sha256=hashlib.sha256(self.raw).hexdigest(),
            output_root=self.root,
            run_id="run-1",
            epoch="epoch-1",
            lease=self.lease,
            revalidate=lambda: None,
            checkouts=[],
            environ={},
        )
        self.prepared: Prepared = prepare(self.root)

    def mint(self, **change: Any) -> Any:
        arguments: dict[str, Any] = {
            "raw_authorization": self.raw,
            "expected": _bindings(self.credentials),
            "claim": self.claim,
            "prepared": self.prepared,
            "environ": {},
        }
        arguments.update(change)
        return mint_real_send(**arguments)


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    monkeypatch.setattr(consumption, "_home", lambda: home)  # only the home lookup
    made = Setup(tmp_path)
    yield made
    made.lease.release()


def _in_child(setup: Setup, url: str, queue: Any) -> None:
    """A forked probe child: mint, then send without and with the account header."""

    async def go() -> list[str]:
        send, transport = setup.mint()
        outcomes = []
        for headers in ({}, {ACCOUNT_HEADER: "acct-2"}, {ACCOUNT_HEADER: "acct-1"}):
            request = httpx.Request("GET", url + "/v1/models", headers=headers)
            try:
                response = await send(request)
                outcomes.append(str(response.status_code))
                await response.aclose()
            except SpendError as error:
                outcomes.append(error.code)
        await transport.aclose()
        return outcomes

    try:
        queue.put(anyio.run(go))
    except SpendError as error:
        queue.put([error.code])


def test_a_child_of_the_controller_mints_and_every_send_needs_the_account(setup: Setup) -> None:
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    with serve_in_thread(WireServer()) as url:
        child = context.Process(target=_in_child, args=(setup, url, queue))
        child.start()
        outcomes = queue.get(timeout=60)
        child.join(30)
    assert outcomes == ["lookup_account_substituted", "lookup_account_substituted", "200"]


def test_the_test_process_is_not_its_own_controllers_child(setup: Setup) -> None:
    with pytest.raises(SpendError) as caught:
        setup.mint()  # our parent is not the claim's controller (us)
    assert caught.value.code == "lookup_parent_mismatch"


@pytest.mark.parametrize("variable", ["CI", "CONTINUITY_DEBUG"])
def test_ci_or_debug_variables_refuse_even_empty(setup: Setup, variable: str) -> None:
    with pytest.raises(SpendError) as caught:
        setup.mint(environ={variable: ""})
    assert caught.value.code == "lookup_pilot_environment_refused"


def test_other_authorization_bytes_or_a_changed_marker_are_refused(setup: Setup) -> None:
    reformatted = msgspec.json.format(setup.raw)  # the same authorization, other bytes
    with pytest.raises(SpendError) as caught:
        setup.mint(raw_authorization=reformatted)
    assert caught.value.code == "lookup_consumption_invalid"
    marker = setup.root / CONSUMED_MARKER
    data = marker.read_text().replace("run-1", "run-2")
    marker.unlink()
    fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    os.write(fd, data.encode())
    os.close(fd)
    with pytest.raises(SpendError) as caught:
        setup.mint()
    assert caught.value.code == "lookup_consumption_invalid"


def test_a_binding_the_validator_refuses_is_refused(setup: Setup) -> None:
    with pytest.raises(SpendError) as caught:
        setup.mint(expected=_bindings(setup.credentials, reader="another-reader"))
    assert caught.value.code == "lookup_authorization_mismatch"
