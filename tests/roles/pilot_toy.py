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
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from continuity.lookup.fixed_budget import ReaderBinding
from continuity.lookup.reader import LOOKUP_BINDINGS, SOL
from continuity.plan.pricing import default_catalog_path
from continuity.roles.guidance import RENDERER_PATH, ROLE_PROTOCOL
from continuity.roles.pilot import PilotRegistered, register_pilot
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


@pytest.fixture
def pilot_toy(tmp_path: Path) -> PilotToy:
    store = Store(tmp_path / "store")
    source = frozen_toy(store, tmp_path)
    holdout = binding_of(store, source)
    budget = tmp_path / "sizing" / "budget.json"
    budget.parent.mkdir()
    sol = ReaderBinding(binding="default", reader=SOL, alternate=LOOKUP_BINDINGS["default"][1])
    sized = msgspec.structs.replace(hand_budget(holdout, hand_slots(holdout.selected)), reader=sol)
    sizing_sha = write_budget(budget, sized)
    catalog = tmp_path / "catalog.json"
    shutil.copyfile(default_catalog_path(), catalog)
    held = holdout_workload(
        store,
        {
            "manifest": str(source.manifest),
            "manifest_sha256": source.manifest_sha256,
            "statistical_spec": str(source.spec),
            "selection_seed": SEED,
            "per_group": None,
        },
        (budget, sizing_sha),
        (128_000, "catalog_max"),
        EXTERNAL_CAP,
        pricing=catalog,
    )
    path = tmp_path / "registration" / "registration.json"
    path.parent.mkdir()
    path.write_bytes(msgspec.json.encode(external(workload([], [], None, held)), order="sorted"))
    return PilotToy(tmp_path, store, catalog, budget, path, sha256_of(path))


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
