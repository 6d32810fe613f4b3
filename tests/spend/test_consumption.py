"""One-use consumption under the writer lease: the burn registry (only the home lookup is
redirected), the claim pair, a crash between the burn and the claims, a recreated root."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from continuity.errors import SpendError
from continuity.spend import consumption
from continuity.spend.consumption import (
    CLAIM_FILE,
    CONSUMED_MARKER,
    FAUX_DOMAIN,
    REAL_DOMAIN,
    consume,
    registry_entry,
    verify_consumption,
)
from continuity.spend.lease import Lease, acquire_lease


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    made = tmp_path / "home"
    made.mkdir(mode=0o700)
    monkeypatch.setattr(consumption, "_home", lambda: made)
    return made


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    made = tmp_path / "checkout"
    made.mkdir()
    return made


def _root(tmp_path: Path, name: str = "out") -> Path:
    made = tmp_path / "runs" / name
    made.mkdir(parents=True, mode=0o700)
    made.chmod(0o700)
    return made


def _consume(root: Path, lease: Lease, checkout: Path, **more: object) -> consumption.Claim:
    options: dict[str, object] = {
        "domain": REAL_DOMAIN,
        "authorization_id": "auth-0001",
        "raw_sha256": "ab" * 32,
        "output_root": root,
        "run_id": "run-1",
        "epoch": "epoch-1",
        "lease": lease,
        "revalidate": lambda: None,
        "checkouts": [checkout],
        "environ": {},
    }
    options.update(more)
    return consume(**options)  # type: ignore[arg-type]


def test_a_consumption_burns_the_id_and_writes_the_pair(
    home: Path, tmp_path: Path, checkout: Path
) -> None:
    root = _root(tmp_path)
    lease = acquire_lease(root)
    claim = _consume(root, lease, checkout)
    entry = registry_entry(REAL_DOMAIN, "auth-0001", root)
    assert entry.parent == home / ".local/state/continuity/lookup-pilot/consumed-v1"
    for path in (root / CONSUMED_MARKER, entry / CLAIM_FILE):
        assert os.lstat(path).st_mode & 0o777 == 0o600
        assert json.loads(path.read_text())["authorization_id"] == "auth-0001"
    assert claim.controller_pid == os.getpid() and claim.lease_inode == lease.inode
    verify_consumption(claim, lease)
    # the key is the domain and the id only: another raw artifact of the same id is spent
    other = _root(tmp_path, "other")
    with pytest.raises(SpendError) as caught:
        _consume(other, acquire_lease(other), checkout, raw_sha256="cd" * 32)
    assert caught.value.code == "lookup_authorization_consumed"
    lease.release()


def test_a_crash_between_the_burn_and_the_claims_leaves_the_id_spent(
    home: Path, tmp_path: Path, checkout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _root(tmp_path)
    lease = acquire_lease(root)
    real_write = consumption._write_new

    def crash(path: Path, value: object) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(consumption, "_write_new", crash)
    with pytest.raises(SpendError) as caught:
        _consume(root, lease, checkout)
    assert caught.value.code == "lookup_consumption_failed"
    monkeypatch.setattr(consumption, "_write_new", real_write)
    assert registry_entry(REAL_DOMAIN, "auth-0001", root).is_dir()  # burned
    fresh = _root(tmp_path, "fresh")
    with pytest.raises(SpendError) as caught:
        _consume(fresh, acquire_lease(fresh), checkout)
    assert caught.value.code == "lookup_authorization_consumed"
    lease.release()


def test_a_recreated_root_with_the_marker_copied_back_does_not_verify(
    home: Path, tmp_path: Path, checkout: Path
) -> None:
    root = _root(tmp_path)
    lease = acquire_lease(root)
    claim = _consume(root, lease, checkout)
    marker = (root / CONSUMED_MARKER).read_bytes()
    lease.release()
    root.rename(tmp_path / "runs" / "moved")
    root.mkdir(mode=0o700)
    again = acquire_lease(root)
    (root / CONSUMED_MARKER).write_bytes(marker)
    (root / CONSUMED_MARKER).chmod(0o600)
    with pytest.raises(SpendError) as caught:
        verify_consumption(claim, again)
    assert caught.value.code == "lookup_consumption_invalid"
    with pytest.raises(SpendError) as caught:  # and the id cannot be consumed again
        _consume(root, again, checkout)
    assert caught.value.code == "lookup_pilot_root_used"
    again.release()


def test_a_tampered_or_aliased_claim_does_not_verify(
    home: Path, tmp_path: Path, checkout: Path
) -> None:
    root = _root(tmp_path)
    lease = acquire_lease(root)
    claim = _consume(root, lease, checkout)
    marker = root / CONSUMED_MARKER
    edited = json.loads(marker.read_text())
    edited["run_id"] = "run-2"
    marker.write_text(json.dumps(edited))
    with pytest.raises(SpendError) as caught:
        verify_consumption(claim, lease)
    assert caught.value.code == "lookup_consumption_invalid"
    marker.unlink()
    marker.symlink_to(registry_entry(REAL_DOMAIN, "auth-0001", root) / CLAIM_FILE)
    with pytest.raises(SpendError) as caught:
        verify_consumption(claim, lease)
    assert caught.value.code == "lookup_consumption_invalid"
    lease.release()


def test_a_used_root_is_refused_before_anything_is_burned(
    home: Path, tmp_path: Path, checkout: Path
) -> None:
    root = _root(tmp_path)
    (root / "units").mkdir()
    lease = acquire_lease(root)
    with pytest.raises(SpendError) as caught:
        _consume(root, lease, checkout)
    assert caught.value.code == "lookup_pilot_root_used"
    assert not registry_entry(REAL_DOMAIN, "auth-0001", root).exists()
    lease.release()


def test_a_failed_revalidation_burns_nothing(home: Path, tmp_path: Path, checkout: Path) -> None:
    root = _root(tmp_path)
    lease = acquire_lease(root)

    def refuse() -> None:
        raise SpendError("the account changed", code="lookup_account_substituted")

    with pytest.raises(SpendError) as caught:
        _consume(root, lease, checkout, revalidate=refuse)
    assert caught.value.code == "lookup_account_substituted"
    assert not registry_entry(REAL_DOMAIN, "auth-0001", root).exists()
    lease.release()


@pytest.mark.parametrize("environ", [{"CI": "true"}, {"CI": ""}, {"CONTINUITY_DEBUG": "1"}])
def test_the_real_domain_refuses_under_ci_or_debugging(
    home: Path, tmp_path: Path, checkout: Path, environ: dict[str, str]
) -> None:
    root = _root(tmp_path)
    lease = acquire_lease(root)
    with pytest.raises(SpendError) as caught:
        _consume(root, lease, checkout, environ=environ)
    assert caught.value.code == "lookup_pilot_environment_refused"
    lease.release()


def test_the_faux_domain_keeps_its_own_registry(home: Path, tmp_path: Path, checkout: Path) -> None:
    root = _root(tmp_path)
    lease = acquire_lease(root)
    _consume(root, lease, checkout, domain=FAUX_DOMAIN, environ={"CI": "true"})
    entry = registry_entry(FAUX_DOMAIN, "auth-0001", root)
    assert entry.is_dir() and entry.parent.parent == root.parent
    assert not (home / ".local").exists()  # never the real registry
    lease.release()


def test_overlapping_or_public_paths_are_refused(
    home: Path, tmp_path: Path, checkout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inside = checkout / "out"
    inside.mkdir(mode=0o700)
    lease = acquire_lease(inside)
    with pytest.raises(SpendError) as caught:
        _consume(inside, lease, checkout)
    assert caught.value.code == "lookup_consumption_path_invalid"
    lease.release()
    # the registry inside the output root
    root = _root(tmp_path)
    monkeypatch.setattr(consumption, "_home", lambda: root)
    lease = acquire_lease(root)
    with pytest.raises(SpendError) as caught:
        _consume(root, lease, checkout)
    assert caught.value.code == "lookup_consumption_path_invalid"
    lease.release()
    # an ancestor writable by others (and not sticky)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    public = shared / "out"
    public.mkdir(mode=0o700)
    monkeypatch.setattr(consumption, "_home", lambda: home)
    lease = acquire_lease(public)
    with pytest.raises(SpendError) as caught:
        _consume(public, lease, checkout)
    assert caught.value.code == "lookup_consumption_path_invalid"
    lease.release()
