"""The pilot's writer lease, across real processes: SQLite's own locks, real PIDs and
start identities, SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from continuity.errors import SpendError
from continuity.spend.lease import (
    LEASE_NAME,
    LeaseHolder,
    acquire_lease,
    check_lease,
    process_start,
)

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    made = tmp_path / "pilot"
    made.mkdir(mode=0o700)
    return made


def _run(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter; it prints one JSON line."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        check=False,
    )


CHECK = """
    import json, sys
    from pathlib import Path
    from continuity.errors import SpendError
    from continuity.spend.lease import acquire_lease, check_lease
    root = Path(sys.argv[1])
    out = {}
    try:
        holder = check_lease(root)
        out["check"] = [holder.pid, holder.start]
    except SpendError as e:
        out["check"] = e.code
    try:
        acquire_lease(root)
        out["acquire"] = "acquired"
    except SpendError as e:
        out["acquire"] = e.code
    print(json.dumps(out))
"""


def _other_process(root: Path) -> dict[str, object]:
    done = _run(CHECK, str(root))
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_another_process_sees_the_live_lease_and_cannot_take_it(root: Path) -> None:
    lease = acquire_lease(root)
    for _ in range(50):  # repeated identity checks never drop the lock
        lease.verify()
    seen = _other_process(root)
    assert seen == {
        "check": [os.getpid(), process_start(os.getpid())],
        "acquire": "lookup_lease_exists",
    }
    # the writer lock itself: another connection cannot write
    other = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sqlite3,sys; c=sqlite3.connect(sys.argv[1],timeout=0,isolation_level=None)\n"
            "try:\n c.execute('BEGIN IMMEDIATE'); print('took')\n"
            "except sqlite3.OperationalError as e: print('locked' if 'locked' in str(e) else e)",
            str(root / LEASE_NAME),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert other.stdout.strip() == "locked"
    lease.verify()
    assert stat_mode(root / LEASE_NAME) == 0o600
    lease.release()


def stat_mode(path: Path) -> int:
    return os.lstat(path).st_mode & 0o777


def test_a_released_lease_is_refused_by_both_sides(root: Path) -> None:
    lease = acquire_lease(root)
    lease.release()
    with pytest.raises(SpendError) as caught:
        lease.verify()
    assert caught.value.code == "lookup_lease_released"
    assert _other_process(root)["check"] == "lookup_lease_not_held"
    # the file stays: the root was used, and a second acquisition is refused
    assert _other_process(root)["acquire"] == "lookup_lease_exists"


HOLD = """
    import sys, time
    from pathlib import Path
    from continuity.spend.lease import acquire_lease
    lease = acquire_lease(Path(sys.argv[1]))
    print("held", flush=True)
    time.sleep(120)
"""


def test_a_dead_controllers_lease_is_not_held(root: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(HOLD), str(root)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        holder = check_lease(root)
        assert holder == LeaseHolder(child.pid, process_start(child.pid) or "")
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        if child.stdout is not None:
            child.stdout.close()
    with pytest.raises(SpendError) as caught:
        check_lease(root)
    assert caught.value.code == "lookup_lease_not_held"


def test_a_replaced_lease_file_is_caught_by_lstat(root: Path) -> None:
    lease = acquire_lease(root)
    path = root / LEASE_NAME
    os.rename(path, root / "moved")
    path.write_bytes((root / "moved").read_bytes())
    path.chmod(0o600)
    with pytest.raises(SpendError) as caught:
        lease.verify()
    assert caught.value.code == "lookup_lease_invalid"
    lease.release()


def test_a_second_link_invalidates_the_lease(root: Path) -> None:
    lease = acquire_lease(root)
    os.link(root / LEASE_NAME, root / "alias")
    with pytest.raises(SpendError) as caught:
        lease.verify()
    assert caught.value.code == "lookup_lease_invalid"
    lease.release()


@pytest.mark.parametrize("content", [b"", b"not a database at all, just bytes" * 10])
def test_a_fabricated_lease_is_refused(root: Path, content: bytes) -> None:
    path = root / LEASE_NAME  # an empty file or a matching name proves nothing
    path.write_bytes(content)
    path.chmod(0o600)
    assert _other_process(root)["check"] == "lookup_lease_invalid"


def test_an_unrelated_database_is_refused(root: Path) -> None:
    path = root / LEASE_NAME
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE other (x)")
    connection.commit()
    connection.close()
    path.chmod(0o600)
    assert _other_process(root)["check"] == "lookup_lease_invalid"


def test_a_lease_naming_a_live_process_it_is_not_held_by_is_refused(root: Path) -> None:
    # a copied lease that names a live process (the test's own parent) but whose writer
    # lock nobody holds
    path = root / LEASE_NAME
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE lease (schema TEXT, pid INTEGER, start TEXT)")
    connection.execute(
        "INSERT INTO lease VALUES (?, ?, ?)",
        ("continuity-lookup-pilot-lease-v1", os.getpid(), process_start(os.getpid())),
    )
    connection.commit()
    connection.close()
    path.chmod(0o600)
    assert _other_process(root)["check"] == "lookup_lease_not_held"


def test_a_link_or_a_public_root_is_refused(root: Path, tmp_path: Path) -> None:
    (root / LEASE_NAME).symlink_to(tmp_path / "elsewhere")
    with pytest.raises(SpendError) as caught:
        acquire_lease(root)
    assert caught.value.code == "lookup_lease_exists"
    assert not (tmp_path / "elsewhere").exists()  # the link was not followed
    public = tmp_path / "public"
    public.mkdir(mode=0o755)
    public.chmod(0o755)
    with pytest.raises(SpendError) as caught:
        acquire_lease(public)
    assert caught.value.code == "lookup_lease_root_invalid"
    alias = tmp_path / "alias"
    alias.symlink_to(root)
    with pytest.raises(SpendError) as caught:
        acquire_lease(alias)
    assert caught.value.code == "lookup_lease_root_invalid"


def test_a_failed_acquisition_removes_only_its_own_inode(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> sqlite3.Connection:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(sqlite3, "connect", broken)
    with pytest.raises(SpendError) as caught:
        acquire_lease(root)
    assert caught.value.code == "lookup_lease_failed"
    assert not (root / LEASE_NAME).exists()
    # a file that was there before is never removed
    (root / LEASE_NAME).write_bytes(b"someone else's")
    with pytest.raises(SpendError) as caught:
        acquire_lease(root)
    assert caught.value.code == "lookup_lease_exists"
    assert (root / LEASE_NAME).read_bytes() == b"someone else's"


def test_a_forked_child_does_not_inherit_the_lease(root: Path) -> None:
    lease = acquire_lease(root)
    pid = os.fork()
    if pid == 0:  # the child: verify must refuse
        try:
            lease.verify()
            code = 1
        except SpendError as error:
            code = 0 if error.code == "lookup_lease_released" else 2
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    lease.verify()
    lease.release()


def test_the_start_identity_is_of_a_running_process() -> None:
    me = process_start(os.getpid())
    assert me is not None and me == process_start(os.getpid())
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait(timeout=30)
    assert process_start(done.pid) is None
