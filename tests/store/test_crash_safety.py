"""Crash safety and concurrent writers, with real child processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from continuity.digest import digest_bytes
from continuity.store import Store

WRITER = textwrap.dedent(
    """
    import sys
    from continuity.store import Store
    from continuity.traces.prng import Rng

    store = Store(sys.argv[1])
    rng = Rng(int(sys.argv[2]))
    n = 0
    while True:
        size = rng.between(1, 3_000_000)
        data = rng.token("abcdefghijklmnopqrstuvwxyz", 64) * (size // 64 + 1)
        ref = store.put_blob(data.encode()[:size])
        key = ref.digest[::-1][:64]
        store.record_action(key, kind="crash-test", output=ref)
        n += 1
        if n == 3:
            print("ready", flush=True)
    """
)


def _spawn(store_root: Path, seed: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(store_root), str(seed)],
        stdout=subprocess.PIPE,
        text=True,
    )


def test_sigkill_mid_write_leaves_nothing_partial_or_corrupt(tmp_path: Path) -> None:
    root = tmp_path / "store"
    for round_ in range(3):
        child = _spawn(root, 1000 + round_)
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        time.sleep(0.05 * (round_ + 1))
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
        child.stdout.close()
        assert child.returncode == -signal.SIGKILL
    store = Store(root)
    objects = list(store.iter_objects())
    assert len(objects) >= 9
    for path in objects:
        assert digest_bytes(path.read_bytes()) == path.name, f"corrupt object {path}"
    for path in store.iter_actions():
        key = path.name.removesuffix(".json")
        entry = store.get_action(key)
        assert entry is not None, f"unreadable action {key}"
    assert not store.corruption_events


def test_two_processes_writing_the_same_keys_agree(tmp_path: Path) -> None:
    root = tmp_path / "store"
    children = [_spawn(root, 77), _spawn(root, 77)]  # identical streams: same keys
    for child in children:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
    time.sleep(0.5)
    for child in children:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
        assert child.stdout is not None
        child.stdout.close()
    store = Store(root)
    for path in store.iter_objects():
        assert digest_bytes(path.read_bytes()) == path.name
    keys = [p.name.removesuffix(".json") for p in store.iter_actions()]
    assert keys and all(store.get_action(k) is not None for k in keys)
