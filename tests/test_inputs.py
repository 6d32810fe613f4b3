"""`continuity.inputs`: bounded reads of the files and directories a user names."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from continuity.errors import InputError, UsageError
from continuity.inputs import check_user_dir, read_user_bytes


def test_a_regular_file_is_read_whole_up_to_its_limit(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_bytes(b"x" * 10)
    assert read_user_bytes(path, limit=10, what="the file") == b"x" * 10
    link = tmp_path / "link.json"
    link.symlink_to(path)  # a symlink to a regular file is that file
    assert read_user_bytes(link, limit=10, what="the file") == b"x" * 10


def test_one_byte_over_the_limit_is_refused_naming_the_path_and_limit(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_bytes(b"x" * 11)
    with pytest.raises(InputError) as caught:
        read_user_bytes(path, limit=10, what="the file")
    assert (caught.value.code, caught.value.location) == ("input_too_large", str(path))
    assert "10 bytes" in caught.value.message
    assert isinstance(caught.value, UsageError)


def test_a_huge_sparse_file_is_never_read_in_full(tmp_path: Path) -> None:
    path = tmp_path / "holes.json"
    with path.open("wb") as handle:
        handle.truncate(1 << 40)  # a TiB of holes
    with pytest.raises(InputError) as caught:
        read_user_bytes(path, limit=4 * 1024 * 1024, what="the registration")
    assert caught.value.code == "input_too_large"
    assert "4 MiB (4,194,304 bytes)" in caught.value.message


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "directory", "proc-directory", "socket"])
def test_a_special_file_is_refused_before_any_read(tmp_path: Path, kind: str) -> None:
    import socket

    path: Path
    if kind == "dev-zero":
        path = Path("/dev/zero")
    elif kind == "fifo":
        path = tmp_path / "fifo"
        os.mkfifo(path)  # no writer: a blocking open would hang
    elif kind == "directory":
        path = tmp_path
    elif kind == "proc-directory":
        path = Path("/proc/self/fd")
    else:
        path = tmp_path / "sock"
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
        server.close()
    with pytest.raises(InputError) as caught:
        read_user_bytes(path, limit=1024, what="the file")
    assert (caught.value.code, caught.value.location) == ("input_not_a_file", str(path))


def test_a_proc_file_is_read_within_its_limit() -> None:
    # /proc files report size 0; the read itself is bounded.
    assert b"Name:" in read_user_bytes("/proc/self/status", limit=1 << 20, what="the file")
    with pytest.raises(InputError) as caught:
        read_user_bytes("/proc/self/status", limit=8, what="the file")
    assert caught.value.code == "input_too_large"


def test_a_missing_path_stays_an_oserror_for_the_callers_own_code(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_user_bytes(tmp_path / "absent.json", limit=10, what="the file")
    with pytest.raises(FileNotFoundError):
        read_user_bytes("/proc/nope/x", limit=10, what="the file")
    with pytest.raises(FileNotFoundError):
        check_user_dir(tmp_path / "absent", what="the run")


def test_a_directory_is_checked_and_a_file_refused(tmp_path: Path) -> None:
    assert check_user_dir(tmp_path, what="the run") == tmp_path
    afile = tmp_path / "afile"
    afile.write_text("x")
    for path in (afile, Path("/dev/zero"), Path("/proc/self/status")):
        with pytest.raises(InputError) as caught:
            check_user_dir(path, what="--run-dir")
        assert (caught.value.code, caught.value.location) == ("input_not_a_directory", str(path))
