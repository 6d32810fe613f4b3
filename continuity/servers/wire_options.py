"""The wire stand-in's command line: its options and the socket it listens on.

``python -m continuity.servers.wire`` (`continuity.servers.wire.main`) reads its options
here. Every bad value is a `UsageError` coded ``option_invalid`` at the option it came
from, and a port that cannot be bound is ``port_unavailable`` at ``--port``, so the
command prints one coded line instead of argparse's usage text or a traceback.
"""

from __future__ import annotations

import argparse
import socket
from collections.abc import Callable
from typing import NoReturn

from continuity.errors import UsageError

__all__ = [
    "MAX_LATENCY_MS",
    "CodedArguments",
    "listening_socket",
    "parse_arguments",
    "whole_number",
]

# The longest --latency-ms accepted: ten minutes, past any provider's own timeout.
MAX_LATENCY_MS = 600_000


def whole_number(option: str, minimum: int, maximum: int) -> Callable[[str], int]:
    """An argparse type: a whole number from `minimum` to `maximum`, else ``option_invalid``
    at `option` (raised through argparse, which catches only ValueError and TypeError)."""

    def parse(text: str) -> int:
        stripped = text.strip()
        whole = stripped.isascii() and stripped.isdigit() and len(stripped) <= 12
        if not whole or not minimum <= int(stripped) <= maximum:
            raise UsageError(
                f"{text[:40]!r} is not a whole number from {minimum} to {maximum}",
                code="option_invalid",
                location=option,
            )
        return int(stripped)

    return parse


class CodedArguments(argparse.ArgumentParser):
    """argparse whose usage errors (an unknown option, a missing value) are coded."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message, code="option_invalid", location="argv")


def listening_socket(port: int) -> socket.socket:
    """The listening socket on 127.0.0.1:`port` (0: the kernel chooses).

    Raises:
        UsageError: ``port_unavailable`` when the port cannot be bound (in use, or
            privileged).
    """
    from continuity.servers.asgi import bound_socket

    try:
        return bound_socket(port=port)
    except OSError as error:
        raise UsageError(
            f"cannot listen on 127.0.0.1:{port}: {error.strerror or error}",
            code="port_unavailable",
            location="--port",
        ) from None


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    """The command's options from `argv` (None: ``sys.argv[1:]``).

    Raises:
        UsageError: ``option_invalid`` at the option (``argv`` for an unknown option or
            a missing value).
    """
    parser = CodedArguments(prog="python -m continuity.servers.wire")
    parser.add_argument("--model", default="local-model", help="the model name it serves")
    parser.add_argument(
        "--port",
        type=whole_number("--port", 0, 65535),
        default=0,
        help="port on 127.0.0.1 (default 0: the kernel chooses; fix it to keep the base URL)",
    )
    parser.add_argument(
        "--latency-ms",
        type=whole_number("--latency-ms", 0, MAX_LATENCY_MS),
        default=0,
        help="delay every model call by this many milliseconds (calls overlap)",
    )
    parser.add_argument("--calls-log", help="append every request body to this JSONL file")
    parser.add_argument(
        "--hang-from",
        type=whole_number("--hang-from", 1, 10**9),
        help="never answer calls from this number on",
    )
    parser.add_argument(
        "--stall-from",
        type=whole_number("--stall-from", 1, 10**9),
        help="from this call number on, stream half the answer and then stall until stopped "
        '(the calls log gets {"stalled": N})',
    )
    parser.add_argument(
        "--context-window",
        type=whole_number("--context-window", 1, 10**9),
        help="the model's context window: listed as vLLM lists it (max_model_len in GET "
        "/v1/models), and a request over it refused as vLLM refuses it",
    )
    parser.add_argument(
        "--ignore-output-cap",
        action="store_true",
        help="write past the output cap each request sends (a server that ignores it)",
    )
    return parser.parse_args(argv)
