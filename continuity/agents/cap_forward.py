"""The loopback forwarder inside an outside agent's sandbox (standard library only).

``python -I -S cap_forward.py PORT=SOCKET [PORT=SOCKET ...] -- COMMAND ...``

The sandbox has a network namespace of its own: its loopback holds nothing of the
host's. This script, the first process inside, listens on ``127.0.0.1:PORT`` for each
pair (the ports of the model proxy and the MCP server the agent was given, so no URL is
rewritten and the servers' Host checks still pass) and copies each connection to the
Unix socket ``SOCKET``, which the runner's server also listens on and which is the only
way out of the sandbox. Then it runs COMMAND (the adapter, stdin and stdout inherited)
and exits with its status. Any other port is refused; nothing else is reachable.

It is bound into the sandbox read-only and run by path, never imported by continuity.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import threading

__all__ = ["main"]

_CHUNK = 64 * 1024


def _pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy `source` to `sink` until end of input, then half-close `sink`."""
    try:
        while chunk := source.recv(_CHUNK):
            sink.sendall(chunk)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


def _serve(listener: socket.socket, path: str) -> None:
    while True:
        client, _ = listener.accept()
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(path)
        except OSError:
            client.close()
            upstream.close()
            continue
        for source, sink in ((client, upstream), (upstream, client)):
            threading.Thread(target=_pump, args=(source, sink), daemon=True).start()


def main(argv: list[str]) -> int:
    if "--" not in argv:
        print("usage: cap_forward.py PORT=SOCKET ... -- COMMAND ...", file=sys.stderr)
        return 2
    split = argv.index("--")
    pairs, command = argv[:split], argv[split + 1 :]
    if not command:
        print("cap_forward.py: no command after --", file=sys.stderr)
        return 2
    for pair in pairs:
        port, _, path = pair.partition("=")
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", int(port)))
        listener.listen(64)
        threading.Thread(target=_serve, args=(listener, path), daemon=True).start()
    try:
        return subprocess.call(command)
    except OSError as exc:
        print(f"cap_forward.py: cannot start {command[0]}: {exc}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
