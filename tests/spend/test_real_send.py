"""The real-send factory: every check before it mints, the PID binding and the account
header on every send. Fictional credentials and authorizations, a synthetic home, a
registered pilot whose build is a small exported tree (only the running-code lookup is
redirected to it, as only the home lookup is), a real forked child whose parent is the
consuming controller, and loopback HTTP only."""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import msgspec
import pytest

from continuity.errors import SpendError
from continuity.roles.register import BoundDigests
from continuity.servers.wire import WireServer, serve_in_thread
from continuity.spend import consumption, real_checks
from continuity.spend.assumptions import ASSUMED_V1
from continuity.spend.consumption import CONSUMED_MARKER, REAL_DOMAIN, Claim, consume
from continuity.spend.descriptor import CatalogTier, sealed_catalog
from continuity.spend.lease import Lease, acquire_lease
from continuity.spend.preparation import Prepared
from continuity.spend.real_grant import RealSlot
from continuity.spend.real_send import ACCOUNT_HEADER, mint_real_send
from continuity.spend.safety import allocate_cache_keys
from tests.spend.registered_pilot import descriptor_of, export, register
from tests.spend.test_authorization import _authorization, _bindings, _credentials
from tests.spend.test_catalog_bounded import VENDOR
from tests.spend.test_preparation import prepare

SLOTS = ["s0", "s1"]


class Setup:
    """A consumed real authorization of a registered pilot (`registration`: what
    `tests.spend.registered_pilot.register` changes), and the slot its child was told of."""

    def __init__(self, tmp_path: Path, **registration: Any) -> None:
        self.credentials = _credentials(tmp_path / "auth.json", "acct-1")
        self.src = export(tmp_path / "build")
        self.registered = register(tmp_path, self.src, **registration)
        self.bindings = self.registered.bindings(self.credentials)
        self.raw = _authorization(self.credentials, bindings=self.bindings)
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
        keys = allocate_cache_keys("run-1", SLOTS)
        self.slot = RealSlot(
            slot_id="s0",
            role="native",
            arm="native-lookup",
            epoch="epoch-1",
            cache_key=keys["s0"],
            assigned=keys,
            assumptions=registration.get("registry", ASSUMED_V1),
            effort="high",
        )

    def mint(self, **change: Any) -> Any:
        arguments: dict[str, Any] = {
            "raw_authorization": self.raw,
            "expected": self.bindings,
            "claim": self.claim,
            "prepared": self.prepared,
            "registration": self.registered.path,
            "slot": self.slot,
            "environ": {},
        }
        arguments.update(change)
        return mint_real_send(**arguments)

    def refused(self, **change: Any) -> SpendError:
        with pytest.raises(SpendError) as caught:
            self.mint(**change)
        return caught.value

    def slot_with(self, **change: Any) -> RealSlot:
        return msgspec.structs.replace(self.slot, **change)


@pytest.fixture
def make(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Setup]]:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    monkeypatch.setattr(consumption, "_home", lambda: home)  # only the home lookup
    made: list[Setup] = []

    def setup(**registration: Any) -> Setup:
        one = Setup(tmp_path, **registration)
        # only the running-code lookup: this process "runs" the registered build
        monkeypatch.setattr(real_checks, "_running", lambda: (sys.executable, one.src))
        # and its bytecode goes to a prefix private to the run, as the controller sets it
        prefix = str(one.root / "pycache" / "slot")
        monkeypatch.setattr(real_checks, "_pycache_prefix", lambda: prefix)
        made.append(one)
        return one

    yield setup
    for one in made:
        one.lease.release()


@pytest.fixture
def setup(make: Callable[..., Setup]) -> Setup:
    return make()


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
    other = msgspec.structs.replace(setup.bindings, reader="another-reader")
    assert setup.refused(expected=other).code == "lookup_authorization_mismatch"
    assert setup.refused(expected=_bindings(setup.credentials)).code == (
        "lookup_authorization_mismatch"
    )


# The factory's own checks of the registered plan, role, build, code, cache key and
# readiness. Each passes on the registered pilot (the refusal is then the parent's: this
# process is not its own controller's child) and refuses with its code when one thing
# differs.


def test_the_registered_checks_hold_for_the_registered_child(make: Callable[..., Setup]) -> None:
    setup = make()
    assert setup.refused().code == "lookup_parent_mismatch"  # every earlier check held
    pack_only = setup.slot_with(role="pack-only", arm="continuity-pack-cold")  # Rpack's
    assert setup.refused(slot=pack_only).code == "lookup_parent_mismatch"
    (setup.src / "continuity" / "__pycache__").mkdir()  # Python writes bytecode beside it
    (setup.src / "continuity" / "__pycache__" / "__init__.cpython-311.pyc").write_bytes(b"x")
    assert setup.refused().code == "lookup_parent_mismatch"


def test_another_registration_or_wrapped_registration_is_a_plan_mismatch(setup: Setup) -> None:
    for path in (setup.registered.path, setup.registered.wrapped):
        data = path.read_bytes()
        path.write_bytes(data + b" ")  # the same content, other bytes: not the bound ones
        error = setup.refused()
        assert error.code == "lookup_plan_mismatch"
        path.write_bytes(data)
    assert setup.refused(registration=setup.root / "missing.json").code == "lookup_plan_mismatch"
    assert setup.refused().code == "lookup_parent_mismatch"


@pytest.mark.parametrize(
    "change", [{"effort": "low"}, {"assumptions": VENDOR}], ids=["effort", "registry"]
)
def test_a_child_told_another_plan_is_a_plan_mismatch(setup: Setup, change: dict[str, Any]) -> None:
    error = setup.refused(slot=setup.slot_with(**change))
    assert error.code == "lookup_plan_mismatch" and error.location.startswith("plan.")


@pytest.mark.parametrize(
    ("role", "arm"),
    [
        ("native", "continuity-pack-cold"),  # the role's arm is another
        ("shipping", "native-lookup"),
        ("no-such-role", "native-lookup"),
    ],
)
def test_a_role_the_registration_does_not_hold_is_a_role_mismatch(
    setup: Setup, role: str, arm: str
) -> None:
    assert setup.refused(slot=setup.slot_with(role=role, arm=arm)).code == "lookup_role_mismatch"


def test_another_interpreter_or_tree_than_the_build_is_a_build_mismatch(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    checks = (
        ("/usr/bin/another-python", setup.src, "builds.r0.python"),
        (sys.executable, Path(__file__).resolve().parents[2], "builds.r0.src"),
    )
    for executable, tree, where in checks:
        monkeypatch.setattr(real_checks, "_running", lambda e=executable, t=tree: (e, t))
        error = setup.refused()
        assert (error.code, error.location) == ("lookup_build_mismatch", where)


def test_a_changed_export_is_a_build_mismatch(setup: Setup) -> None:
    (setup.src / "continuity" / "added.py").write_text("")
    error = setup.refused()
    assert (error.code, error.location) == ("lookup_build_mismatch", "builds.r0.files")
    (setup.src / "continuity" / "added.py").unlink()
    (setup.src / "dodo.py").write_text("# changed\n")
    assert setup.refused().code == "lookup_build_mismatch"


def test_a_role_whose_checkout_has_no_build_is_a_build_mismatch(
    make: Callable[..., Setup],
) -> None:
    setup = make(built=("rpack",))
    error = setup.refused()  # native runs R0's code, which has no build
    assert (error.code, error.location) == ("lookup_build_mismatch", "builds.r0")
    pack_only = setup.slot_with(role="pack-only", arm="continuity-pack-cold")
    assert setup.refused(slot=pack_only).code == "lookup_parent_mismatch"


def test_a_build_the_authorization_does_not_bind_is_a_build_mismatch(
    make: Callable[..., Setup],
) -> None:
    setup = make(bindings={"r0_build": "5" * 64})
    assert setup.refused().code == "lookup_build_mismatch"


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"revision": "3" * 40}, "REVISION"),  # the export is another commit
        ({"bindings": {"r0_code": "4" * 40}}, "r0.tree"),  # another tree is authorized
        (
            {
                "digests": BoundDigests(
                    entrypoint={"dodo.py": "0" * 64}, reader={}, scorer={}, lock={}, budget={}
                )
            },
            "digests.entrypoint",
        ),
        (
            {
                "digests": BoundDigests(
                    entrypoint={},
                    reader={"continuity/lookup/reader.py": "0" * 64},
                    scorer={},
                    lock={},
                    budget={},
                )
            },
            "digests.reader",  # registered, but the running tree has no such file
        ),
    ],
    ids=["revision", "tree", "entrypoint", "reader"],
)
def test_code_that_is_not_the_registered_code_is_a_code_mismatch(
    make: Callable[..., Setup], change: dict[str, Any], where: str
) -> None:
    error = make(**change).refused()
    assert (error.code, error.location) == ("lookup_code_mismatch", where)


def test_a_foreign_key_another_runs_keys_or_another_epoch_are_refused(setup: Setup) -> None:
    foreign = setup.slot_with(cache_key=setup.slot.assigned["s1"])
    assert setup.refused(slot=foreign).code == "lookup_cache_assignment_invalid"
    others = allocate_cache_keys("run-2", SLOTS)  # sound keys, but not the claim's run's
    other_run = setup.slot_with(cache_key=others["s0"], assigned=others)
    error = setup.refused(slot=other_run)
    assert (error.code, error.location) == ("lookup_cache_assignment_invalid", "assigned")
    error = setup.refused(slot=setup.slot_with(epoch="epoch-2"))
    assert (error.code, error.location) == ("lookup_consumption_invalid", "epoch")


def _blocked(setup: Setup) -> str:
    error = setup.refused()
    assert error.code == "lookup_readiness_blocked"
    return error.message


def test_a_reader_the_registry_does_not_register_blocks_readiness(
    make: Callable[..., Setup],
) -> None:
    assert "lookup_pilot_reader_mismatch" in _blocked(make(reader="openai:gpt-other"))


def test_a_catalog_that_disagrees_with_the_registry_blocks_readiness(
    make: Callable[..., Setup],
) -> None:
    descriptor = descriptor_of(ASSUMED_V1)
    catalog = sealed_catalog(msgspec.structs.replace(descriptor.catalog, output="11"))
    changed = msgspec.structs.replace(descriptor, catalog=catalog)
    assert "lookup_pilot_catalog_mismatch" in _blocked(make(descriptor=changed))


def test_a_tier_without_its_rates_blocks_readiness(make: Callable[..., Setup]) -> None:
    descriptor = descriptor_of(ASSUMED_V1)
    tier = CatalogTier(
        above_input_tokens=300_000, input=None, output="20", cache_read="0.2", cache_write="5"
    )
    catalog = sealed_catalog(msgspec.structs.replace(descriptor.catalog, tiers=(tier,)))
    changed = msgspec.structs.replace(descriptor, catalog=catalog)
    assert _blocked(make(descriptor=changed)).endswith("lookup_pilot_prices_missing")


@pytest.mark.parametrize("prefix", [None, "/tmp/elsewhere-pycache"])
def test_bytecode_read_from_outside_the_run_is_a_build_mismatch(
    setup: Setup, monkeypatch: pytest.MonkeyPatch, prefix: str | None
) -> None:
    # the build check skips bytecode, so a planted __pycache__ beside the tree would run
    monkeypatch.setattr(real_checks, "_pycache_prefix", lambda: prefix)
    error = setup.refused()
    assert (error.code, error.location) == ("lookup_build_mismatch", "pycache")
