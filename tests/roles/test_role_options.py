"""The roles tasks need every one of their path options: a missing one is refused with
its code and location before anything is read or written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_options import doit_cli


@pytest.mark.parametrize(
    ("args", "missing"),
    [
        (["compare_register", "--r0", "/a", "--r0-revision", "0" * 40], "--rpack"),
        (["compare_run", "--registration", "/r.json", "--sha256", "0" * 64], "--output"),
        (["compare_aggregate", "--sha256", "0" * 64, "--output", "/o"], "--registration"),
    ],
)
def test_a_missing_option_is_refused_with_its_code(
    tmp_path: Path, args: list[str], missing: str
) -> None:
    result = doit_cli(tmp_path, *args)
    assert result.returncode == 1, result
    assert f"option_value_missing: {args[0]} needs {missing} (at {missing})" in result.stdout + (
        result.stderr
    )
    assert not (tmp_path / "store" / "objects").exists()
