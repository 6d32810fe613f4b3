"""The credentials file and the live session's trace are user files: read bounded, a
special or oversized file is one coded error, never a hang or a MemoryError."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from continuity.errors import InputError, ProviderError
from continuity.harness.live import main as live_main
from continuity.providers.transport import CREDENTIALS_MAX_BYTES, load_api_key


def _special(tmp_path: Path, kind: str) -> Path:
    if kind == "device":
        return Path("/dev/zero")
    path = tmp_path / "special"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    else:
        with path.open("wb") as handle:
            handle.truncate(CREDENTIALS_MAX_BYTES + 1)
    return path


@pytest.mark.parametrize("kind", ["device", "fifo", "directory", "huge"])
def test_a_credentials_file_that_is_not_a_small_regular_file(tmp_path: Path, kind: str) -> None:
    path = _special(tmp_path, kind)
    with pytest.raises(InputError) as caught:
        load_api_key(str(path))
    assert caught.value.code == ("input_too_large" if kind == "huge" else "input_not_a_file")
    assert caught.value.location == str(path)


def test_a_readable_credentials_file_still_reads_and_a_bad_one_keeps_its_code(
    tmp_path: Path,
) -> None:
    good = tmp_path / "good.json"
    good.write_text('{"api_key": "sk-test"}')
    assert load_api_key(str(good)) == "sk-test"
    with pytest.raises(ProviderError) as caught:
        load_api_key(str(tmp_path / "missing.json"))
    assert caught.value.code == "credentials_invalid"


@pytest.mark.parametrize("kind", ["device", "fifo", "directory"])
def test_the_live_sessions_trace_is_read_bounded(
    tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _special(tmp_path, kind)
    assert live_main(["run", "--workspace", str(tmp_path / "ws"), "--trace", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error input_not_a_file:") and "Traceback" not in err
