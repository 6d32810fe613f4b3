"""Zygotes: a pre-imported process forks a fresh child per call (continuity.zygote)."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

from continuity.errors import CheckpointError, HarnessError
from continuity.zygote import Zygote, ZygotePool, call_in_child
from tests.conftest import REPO

T = "tests.zygote_targets"


@pytest.fixture(autouse=True)
def _targets_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    """The zygote imports `tests.zygote_targets` by name, from the checkout."""
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("PYTHONPATH", str(REPO))


@pytest.fixture
def pool() -> Iterator[ZygotePool]:
    with ZygotePool([T]) as started:
        yield started


def test_a_call_returns_what_the_target_returned(pool: ZygotePool) -> None:
    assert pool.call(f"{T}:echo", b"abc", 60, "echo") == b"cba"
    big = os.urandom(3 << 20)  # larger than a pipe's buffer, both ways
    assert pool.call(f"{T}:echo", big, 60, "echo") == big[::-1]
    assert pool.call(f"{T}:echo", b"", 60, "echo") == b""


def test_every_call_is_a_fresh_child_of_the_zygote(pool: ZygotePool) -> None:
    first = pool.call(f"{T}:pid", b"", 60, "pid").split()
    second = pool.call(f"{T}:pid", b"", 60, "pid").split()
    zygote = pool.zygote().process.pid
    assert first[1] == second[1] == str(zygote).encode()
    assert first[0] != second[0] and int(first[0]) not in (zygote, os.getpid())
    # No state from an earlier call: the zygote itself never runs one.
    assert pool.call(f"{T}:remember", b"one", 60, "remember") == b"one"
    assert pool.call(f"{T}:remember", b"two", 60, "remember") == b"two"


def test_a_stray_print_never_lands_in_the_reply(pool: ZygotePool) -> None:
    assert pool.call(f"{T}:talk", b"", 60, "talk") == b"fine"
    assert pool.call(f"{T}:echo", b"xy", 60, "echo") == b"yx"


def test_a_typed_error_is_raised_again_with_its_class_code_and_location(
    pool: ZygotePool,
) -> None:
    with pytest.raises(HarnessError) as err:
        pool.call(f"{T}:raise_typed", b"", 60, "replay")
    assert (err.value.code, err.value.location) == ("replay_broke", "turn 3")
    assert err.value.message == "the replay broke"


def test_an_untyped_error_is_child_failed_naming_it(pool: ZygotePool) -> None:
    with pytest.raises(CheckpointError) as err:
        pool.call(f"{T}:raise_untyped", b"", 60, "unit worker")
    assert err.value.code == "child_failed"
    assert err.value.message == "ValueError: not a typed error"
    with pytest.raises(CheckpointError) as err:
        pool.call(f"{T}:nope", b"", 60, "unit worker")  # no such function
    assert err.value.code == "child_failed" and "AttributeError" in err.value.message
    assert pool.call(f"{T}:echo", b"ok", 60, "echo") == b"ko"  # the zygote lives on


def test_a_child_that_dies_is_child_failed_and_the_zygote_lives_on(pool: ZygotePool) -> None:
    with pytest.raises(CheckpointError) as err:
        pool.call(f"{T}:die", b"", 60, "unit worker")
    assert err.value.code == "child_failed"
    assert "unit worker: the child died without replying (wait status 9)" in err.value.message
    assert pool.call(f"{T}:echo", b"ok", 60, "echo") == b"ko"


def test_a_call_past_its_timeout_kills_the_zygote_and_the_next_call_starts_another(
    pool: ZygotePool,
) -> None:
    pool.call(f"{T}:echo", b"", 60, "echo")
    first = pool.zygote()
    with pytest.raises(CheckpointError) as err:
        pool.call(f"{T}:sleep", b"30", 0.5, "unit worker")
    assert err.value.code == "child_failed" and "timeout" in err.value.message
    assert not first.alive()
    assert pool.call(f"{T}:sleep", b"0", 60, "unit worker") == b"woke"
    assert pool.zygote() is not first


def test_a_preload_that_fails_is_a_coded_error_at_the_first_call() -> None:
    with ZygotePool(["continuity_no_such_module"]) as pool, pytest.raises(CheckpointError) as err:
        pool.call(f"{T}:echo", b"", 60, "unit worker")
    assert err.value.code == "child_failed" and "ModuleNotFoundError" in err.value.message


def test_each_thread_has_its_own_zygote(pool: ZygotePool) -> None:
    seen: dict[str, int] = {}
    both = threading.Barrier(2)

    def work(name: str) -> None:
        pool.call(f"{T}:echo", b"", 60, "echo")
        seen[name] = pool.zygote().process.pid
        pool.call(f"{T}:echo", b"", 60, "echo")
        assert pool.zygote().process.pid == seen[name]  # reused within the thread
        both.wait(timeout=60)  # both alive: neither may take the other's

    threads = [threading.Thread(target=work, args=(n,)) for n in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(seen.values())) == 2


def test_close_stops_every_zygote() -> None:
    pool = ZygotePool([T])
    pool.call(f"{T}:echo", b"", 60, "echo")
    zygote = pool.zygote()
    pool.close()
    assert zygote.process.returncode == 0


def test_call_in_child_runs_one_call_in_a_zygote_of_its_own() -> None:
    assert call_in_child([T], f"{T}:echo", b"12", 60, "echo") == b"21"


def test_a_zygote_dies_with_the_thread_that_started_it() -> None:
    started: list[Zygote] = []

    def start() -> None:
        zygote = Zygote([T])
        zygote.call(f"{T}:echo", b"", 60, "echo")
        started.append(zygote)

    thread = threading.Thread(target=start)
    thread.start()
    thread.join()
    assert started[0].process.wait(timeout=10) == -9  # the kernel's SIGKILL
    started[0].close()


def test_zygotes_started_up_front_are_taken_by_the_first_callers() -> None:
    with ZygotePool([T], start=2) as pool:
        spare = {z.process.pid for z in pool.free}
        assert len(spare) == 2  # running before any call: their imports overlap ours
        taken: list[int] = []
        all_three = threading.Barrier(3)

        def work() -> None:
            pool.call(f"{T}:echo", b"", 60, "echo")
            taken.append(pool.zygote().process.pid)
            all_three.wait(timeout=60)

        threads = [threading.Thread(target=work) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(set(taken)) == 3 and spare < set(taken)  # the third started its own


def test_a_zygote_outlives_the_thread_that_used_it_and_serves_the_next() -> None:
    """A pool handed from one stage's threads to the next starts its zygotes once."""
    with ZygotePool([T]) as pool:
        used: list[Zygote] = []

        def stage() -> None:
            pool.call(f"{T}:echo", b"", 60, "echo")
            used.append(pool.zygote())

        for _ in range(2):
            thread = threading.Thread(target=stage)
            thread.start()
            thread.join()
        assert used[0] is used[1] and used[0].alive()
        assert pool.free == [used[0]]


def test_a_child_killed_while_writing_its_reply_died_whatever_it_wrote(
    pool: ZygotePool,
) -> None:
    with pytest.raises(CheckpointError) as err:
        pool.call(f"{T}:die_mid_reply", b"", 60, "unit worker")
    assert err.value.code == "child_failed" and "died without replying" in err.value.message


def test_a_child_that_dies_is_explained_by_its_last_line_on_stderr(pool: ZygotePool) -> None:
    pool.call(f"{T}:echo", b"", 60, "echo")
    with pytest.raises(CheckpointError) as err:
        pool.call(f"{T}:complain_and_die", b"", 60, "unit worker")
    assert err.value.message.endswith("(its last line: something went badly wrong)")


def test_a_zygote_whose_stdin_closes_mid_request_exits_without_forking() -> None:
    zygote = subprocess.Popen(
        [sys.executable, "-m", "continuity.zygote", "--preload", T],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert zygote.stdin is not None and zygote.stdout is not None
    zygote.stdin.write(struct.pack(">II", 40, 5) + b"tests.zygote")  # then nothing more
    zygote.stdin.close()
    assert zygote.wait(timeout=30) == 0
    ready = zygote.stdout.read()
    zygote.stdout.close()
    assert ready[:1] == b"\x00" and ready[5:] == str(zygote.pid).encode()  # no second reply


def test_closing_a_pool_kills_a_zygote_that_never_served_at_once() -> None:
    pool = ZygotePool([T], start=1)
    (zygote,) = pool.free
    pool.close()
    assert zygote.process.returncode == -9


def test_a_timeout_names_its_limit_and_quotes_no_earlier_calls_line(pool: ZygotePool) -> None:
    """A zygote passed from call to call (and thread to thread): a failure quotes only
    what its own call wrote to stderr."""
    with pytest.raises(CheckpointError):
        pool.call(f"{T}:complain_and_die", b"", 60, "unit worker")  # the zygote lives on
    with pytest.raises(CheckpointError) as err:
        pool.call(f"{T}:sleep", b"30", 0.5, "probe child")
    assert err.value.message == "probe child ran past its 0.5 s timeout and was killed"


def test_an_interrupt_mid_call_kills_the_zygote_so_no_reply_is_left_unread(
    pool: ZygotePool, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool.call(f"{T}:echo", b"", 60, "echo")
    first = pool.zygote()

    def interrupted(*_: object) -> tuple[int, bytes]:
        raise KeyboardInterrupt

    monkeypatch.setattr(first, "_reply", interrupted)
    with pytest.raises(KeyboardInterrupt):
        pool.call(f"{T}:sleep", b"0.2", 60, "unit worker")
    assert not first.alive()
    assert pool.call(f"{T}:echo", b"ab", 60, "echo") == b"ba"  # a new zygote's reply
    assert pool.zygote() is not first


def test_a_zygote_that_died_idle_is_reaped_and_replaced() -> None:
    with ZygotePool([T]) as pool:
        pool.call(f"{T}:echo", b"", 60, "echo")
        dead = pool.zygote()
        dead.process.kill()
        dead.process.wait()
        assert pool.call(f"{T}:echo", b"xy", 60, "echo") == b"yx"
        assert pool.zygote() is not dead and pool.free == []
        assert dead.process.stdin is not None and dead.process.stdin.closed


def test_a_call_after_close_is_child_failed() -> None:
    pool = ZygotePool([T], start=1)
    pool.close()
    with pytest.raises(CheckpointError) as err:
        pool.call(f"{T}:echo", b"", 60, "echo")
    assert err.value.code == "child_failed" and err.value.message == "the zygote pool is closed"
