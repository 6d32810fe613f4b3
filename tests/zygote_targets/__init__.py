"""Targets for tests/test_zygote.py, imported by the zygote's children by name."""

from __future__ import annotations

import os
import signal
import time

from continuity.errors import HarnessError

__all__ = [
    "complain_and_die",
    "die",
    "die_mid_reply",
    "echo",
    "pid",
    "raise_typed",
    "raise_untyped",
    "remember",
    "sleep",
    "talk",
]

_SEEN: list[bytes] = []


def echo(payload: bytes) -> bytes:
    return payload[::-1]


def pid(payload: bytes) -> bytes:
    return f"{os.getpid()} {os.getppid()}".encode()


def remember(payload: bytes) -> bytes:
    """What earlier calls left in this process: nothing, in a fresh child."""
    _SEEN.append(payload)
    return b",".join(_SEEN)


def talk(payload: bytes) -> bytes:
    print("a stray line on stdout")  # must never land in the reply
    return b"fine"


def raise_typed(payload: bytes) -> bytes:
    raise HarnessError("the replay broke", code="replay_broke", location="turn 3")


def raise_untyped(payload: bytes) -> bytes:
    raise ValueError("not a typed error")


def die(payload: bytes) -> bytes:
    os.kill(os.getpid(), signal.SIGKILL)
    return b""


def _link(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return ""


def sleep(payload: bytes) -> bytes:
    time.sleep(float(payload))
    return b"woke"


def complain_and_die(payload: bytes) -> bytes:
    """Leaves a line on stderr, then dies without a reply."""
    os.write(2, b"something went badly wrong\n")
    os.kill(os.getpid(), signal.SIGKILL)
    return b""


def die_mid_reply(payload: bytes) -> bytes:
    """A reply the child never finishes writing: it is killed after the first bytes."""
    pipes = [
        int(fd) for fd in os.listdir("/proc/self/fd") if "pipe:" in _link(f"/proc/self/fd/{fd}")
    ]
    assert len(pipes) == 1, pipes  # the only pipe a child holds: its reply's
    os.write(pipes[0], b"\x00partial")  # a valid status byte, then not all of the body
    os.kill(os.getpid(), signal.SIGKILL)
    return b""
