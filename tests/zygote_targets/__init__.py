"""Targets for tests/test_zygote.py, imported by the zygote's children by name."""

from __future__ import annotations

import os
import signal
import time

from continuity.errors import HarnessError

__all__ = ["die", "echo", "pid", "raise_typed", "raise_untyped", "remember", "sleep", "talk"]

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


def sleep(payload: bytes) -> bytes:
    time.sleep(float(payload))
    return b"woke"
