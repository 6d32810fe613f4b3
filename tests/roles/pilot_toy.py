"""A pilot registration over a real external registration of the toy holdout, cheaply.

The toy holdout of `tests.plan.test_holdout_estimate` is frozen for real and sized by
hand (three eligible slots with a 1,000-token first request, one context-bound), read
by Sol (the lookup reader binding's reader, the model assumed-v1 registers) and priced
with a copy of the checked-in catalog. The external registration binds it through
`holdout_workload` (the estimate's own checks); its checkouts are never touched, so
they are placeholders, as in `tests.roles.test_external_registration`.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from continuity.lookup.fixed_budget import ReaderBinding
from continuity.lookup.reader import LOOKUP_BINDINGS, SOL
from continuity.plan.pricing import default_catalog_path
from continuity.plan.request import HoldoutRequest
from continuity.roles.guidance import RENDERER_PATH, ROLE_PROTOCOL
from continuity.roles.pilot.registration import PilotRegistered, register_pilot
from continuity.roles.register import (
    REGISTRATION_SCHEMA_V2,
    BoundDigests,
    Checkout,
    Registration,
    workload,
)
from continuity.roles.register_holdout import holdout_workload
from continuity.roles.table import ROLES
from continuity.store import Store
from tests.plan.test_holdout_estimate import (
    SEED,
    binding_of,
    frozen_toy,
    hand_budget,
    hand_slots,
    write_budget,
)

# Sol's reservation per eligible slot: 10 x (272,000 x $2 + 128,000 x $10) / 10^6 =
# $18.24; three eligible slots: $54.72; C = ceil-to-cents(1.25 x 54.72) = $68.40.
EXTERNAL_CAP = "68.40"
PILOT_CAP = "25.00"
SCHEDULE_SEED = 7


class PilotToy(msgspec.Struct):
    root: Path
    store: Store
    catalog: Path
    budget: Path
    registration: Path
    sha256: str


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


VENDOR_READER = "openai:gpt-test"  # a fictional model on OpenAI's Responses API
VENDOR_PRICE = {
    "input": 1.25,
    "output": 10.0,
    "cache_read": 0.125,
    "cache_write": 1.25,
    "context_window": 400_000,
    "max_output": 128_000,
    "tiers": [],
}
# the estimate's C for the vendor reader's three eligible slots, as doit estimate prints it
VENDOR_EXTERNAL_CAP = "66.75"


def make_toy(root: Path, reader: str = SOL) -> PilotToy:
    """The toy's store, frozen holdout, sizing, catalog and external registration, read
    by `reader` (a vendor reader gets its own fictional catalog entry)."""
    store = Store(root / "store")
    source = frozen_toy(store, root)
    holdout = binding_of(store, source)
    budget = root / "sizing" / "budget.json"
    budget.parent.mkdir()
    binding = ReaderBinding(
        binding="default", reader=reader, alternate=LOOKUP_BINDINGS["default"][1]
    )
    sized = msgspec.structs.replace(
        hand_budget(holdout, hand_slots(holdout.selected)), reader=binding
    )
    sizing_sha = write_budget(budget, sized)
    catalog = root / "catalog.json"
    shutil.copyfile(default_catalog_path(), catalog)
    if reader != SOL:
        data = json.loads(catalog.read_text())
        data["models"][reader] = VENDOR_PRICE
        catalog.write_text(json.dumps(data))
    held = holdout_workload(
        store,
        HoldoutRequest(
            manifest=str(source.manifest),
            manifest_sha256=source.manifest_sha256,
            statistical_spec=str(source.spec),
            selection_seed=SEED,
        ),
        (budget, sizing_sha),
        (128_000, "catalog_max"),
        EXTERNAL_CAP if reader == SOL else VENDOR_EXTERNAL_CAP,
        pricing=catalog,
    )
    path = root / "registration" / "registration.json"
    path.parent.mkdir()
    work = workload([], [], None, held)  # its reader is the sizing's
    assert work.reader_model == reader
    path.write_bytes(msgspec.json.encode(external(work), order="sorted"))
    return PilotToy(root, store, catalog, budget, path, sha256_of(path))


@pytest.fixture
def pilot_toy(tmp_path: Path) -> PilotToy:
    return make_toy(tmp_path)


@pytest.fixture
def vendor_toy(tmp_path: Path) -> PilotToy:
    return make_toy(tmp_path, VENDOR_READER)


def external(work: Any, schema: str = REGISTRATION_SCHEMA_V2) -> Registration:
    """A compare registration of `work` whose checkouts are placeholders."""
    checkout = Checkout(path="/nonexistent/checkout", revision="0" * 40, tree="0" * 40)
    return Registration(
        schema=schema,
        protocol=ROLE_PROTOCOL,
        r0=checkout,
        rpack=checkout,
        differing=[RENDERER_PATH],
        digests=BoundDigests(entrypoint={}, reader={}, scorer={}, lock={}, budget={}),
        workload=work,
        roles=list(ROLES),
        builds={},
    )


def registered(toy: PilotToy, name: str = "pilot", **more: Any) -> PilotRegistered:
    """A pilot registration of the toy's external registration, in a new directory."""
    return register_pilot(
        more.pop("registration", toy.registration),
        more.pop("sha256", toy.sha256),
        more.pop("cap_usd", PILOT_CAP),
        more.pop("seed", SCHEDULE_SEED),
        str(toy.root / name),
        pricing=more.pop("pricing", toy.catalog),
    )


def rewritten(path: Path, change: Callable[[dict[str, Any]], None]) -> str:
    """Edit the JSON file at `path` in place; its new raw sha256."""
    data = msgspec.json.decode(path.read_bytes())
    change(data)
    path.write_bytes(msgspec.json.encode(data, order="sorted"))
    return sha256_of(path)
