"""Every real-mode refusal: its code, its order, and that no credential was opened."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from continuity.errors import RealModeError
from continuity.plan.estimate import dry_run, record_dry_run
from continuity.plan.from_request import plan_from_request
from continuity.plan.guards import check_real_mode
from continuity.plan.plan import Plan, plan_digest
from continuity.plan.pricing import load_catalog
from continuity.plan.request import PlanRequest
from continuity.plan.workload import workload
from continuity.runner.real import run_real
from continuity.runner.real_request import RealRequest
from continuity.store import Store
from tests.conftest import git
from tests.graph.test_dodo import doit


@pytest.fixture
def checkout(clean_checkout: Path) -> Path:
    """A clean checkout with code where real mode looks for it (`CODE_PATHS`) beside a
    tracked file that is no code (``tracked.txt``)."""
    (clean_checkout / "continuity").mkdir()
    (clean_checkout / "continuity" / "plan.py").write_text("PLAN = 1\n")
    (clean_checkout / "fixtures").mkdir()
    (clean_checkout / "fixtures" / "trace.json").write_text("{}\n")
    (clean_checkout / "dodo.py").write_text("")
    git(clean_checkout, "add", ".")
    git(clean_checkout, "commit", "-q", "-m", "code")
    return clean_checkout


@pytest.fixture
def credentials(tmp_path: Path) -> Path:
    path = tmp_path / "secrets" / "credentials.json"
    path.parent.mkdir()
    path.write_text('{"api_key": "sk-never-read"}')
    return path


class Setup:
    def __init__(self, tmp_path: Path, checkout: Path, credentials: Path) -> None:
        self.store = Store(tmp_path / "store")
        self.checkout = checkout
        self.credentials = str(credentials)
        self.output = str(tmp_path / "run-1")
        self.plan = plan_from_request(PlanRequest.of(self.options()))
        result = dry_run(self.plan, workload(self.plan), load_catalog())
        record_dry_run(self.store, result, tmp_path / "out")
        self.digest = result.digest

    def options(self, **extra: Any) -> dict[str, Any]:
        return {
            "provider": "openai-chat",
            "base_url": "http://127.0.0.1:9/v1",
            "credentials": self.credentials if hasattr(self, "credentials") else "",
            "probe_limit": 1,
            "arms": "native",
            **extra,
        }

    def check(self, plan: Plan | None = None, **overrides: Any) -> Any:
        arguments: dict[str, Any] = {
            "confirm": self.digest,
            "credentials": self.credentials,
            "output": self.output,
            "store": self.store,
            "checkout": self.checkout,
            "environ": {},
        }
        arguments.update(overrides)
        return check_real_mode(plan or self.plan, **arguments)


@pytest.fixture
def setup(tmp_path: Path, checkout: Path, credentials: Path) -> Setup:
    return Setup(tmp_path, checkout, credentials)


def refused(setup: Setup, opened: list[str], code: str, **overrides: Any) -> RealModeError:
    with pytest.raises(RealModeError) as caught:
        setup.check(**overrides)
    assert caught.value.code == code, str(caught.value)
    assert setup.credentials not in opened  # refused before any credential read
    return caught.value


def test_a_clean_confirmed_setup_passes(setup: Setup, opened_files: list[str]) -> None:
    output, dry = setup.check()
    assert output == Path(setup.output).resolve()
    assert dry.digest == setup.digest
    assert setup.credentials not in opened_files  # even passing guards read nothing


@pytest.mark.parametrize("value", ["", "true", "false"])
def test_ci_variable_refuses_even_empty(setup: Setup, opened_files: list[str], value: str) -> None:
    refused(setup, opened_files, "real_refused_ci", environ={"CI": value})


def test_scripted_plan_is_not_real(setup: Setup, opened_files: list[str]) -> None:
    refused(setup, opened_files, "real_provider_required", plan=plan_from_request(PlanRequest()))


HOSTED = {"base_url": "https://models.invalid/v1"}


def test_credentials_file_is_required_away_from_this_machine(
    setup: Setup, opened_files: list[str]
) -> None:
    hosted = plan_from_request(PlanRequest.of(setup.options(**HOSTED)))
    error = refused(setup, opened_files, "credentials_required", credentials=None, plan=hosted)
    assert "models.invalid" in error.message


def test_a_server_on_this_machine_needs_no_credentials(
    setup: Setup, opened_files: list[str]
) -> None:
    output, dry = setup.check(credentials=None)  # the plan's endpoint is 127.0.0.1
    assert dry.digest == setup.digest and output == Path(setup.output).resolve()


def test_confirmation_is_required(setup: Setup, opened_files: list[str]) -> None:
    refused(setup, opened_files, "confirmation_required", confirm=None)


def test_confirmation_must_match_this_plan(setup: Setup, opened_files: list[str]) -> None:
    other = plan_from_request(PlanRequest.of(setup.options(repeats=2)))
    error = refused(setup, opened_files, "confirmation_mismatch", plan=other)
    assert plan_digest(other)[:16] in error.message


def test_confirmation_needs_a_recorded_dry_run(
    setup: Setup, opened_files: list[str], tmp_path: Path
) -> None:
    refused(setup, opened_files, "confirmation_unknown", store=Store(tmp_path / "other"))


def test_credentials_file_must_exist(setup: Setup, opened_files: list[str], tmp_path: Path) -> None:
    missing = str(tmp_path / "secrets" / "nope.json")
    plan = plan_from_request(PlanRequest.of({**setup.options(), "credentials": missing}))
    result = dry_run(plan, workload(plan), load_catalog())
    record_dry_run(setup.store, result, tmp_path / "out")
    with pytest.raises(RealModeError) as caught:
        setup.check(plan=plan, confirm=result.digest, credentials=missing)
    assert caught.value.code == "credentials_missing"
    assert missing not in opened_files


def test_output_is_required(setup: Setup, opened_files: list[str]) -> None:
    refused(setup, opened_files, "output_required", output=None)


def test_output_inside_the_checkout_is_refused(setup: Setup, opened_files: list[str]) -> None:
    refused(
        setup, opened_files, "output_inside_checkout", output=str(setup.checkout / "runs" / "r1")
    )
    refused(setup, opened_files, "output_inside_checkout", output=str(setup.checkout))


def test_output_symlinked_into_the_checkout_is_refused(
    setup: Setup, opened_files: list[str], tmp_path: Path
) -> None:
    link = tmp_path / "innocent-looking"
    os.symlink(setup.checkout, link)
    refused(setup, opened_files, "output_inside_checkout", output=str(link / "run"))


@pytest.mark.parametrize("path", ["continuity/plan.py", "fixtures/trace.json", "dodo.py"])
def test_a_modified_code_file_is_dirty(setup: Setup, opened_files: list[str], path: str) -> None:
    (setup.checkout / path).write_text("changed\n")
    error = refused(setup, opened_files, "checkout_dirty")
    assert path in error.message and error.location == str(setup.checkout.resolve())


@pytest.mark.parametrize("path", ["continuity/new.py", "fixtures/new.json", "rules/new.py"])
def test_an_untracked_code_file_is_dirty(setup: Setup, opened_files: list[str], path: str) -> None:
    (setup.checkout / path).parent.mkdir(exist_ok=True)
    (setup.checkout / path).write_text("new\n")
    error = refused(setup, opened_files, "checkout_dirty")
    assert path in error.message


def test_a_note_outside_the_code_is_no_change(setup: Setup, opened_files: list[str]) -> None:
    (setup.checkout / "notes.txt").write_text("an untracked note in the checkout root\n")
    (setup.checkout / "tracked.txt").write_text("a tracked file that is no code, edited\n")
    (setup.checkout / "docs").mkdir()
    (setup.checkout / "docs" / "draft.md").write_text("draft\n")
    output, dry = setup.check()
    assert output == Path(setup.output).resolve() and dry.digest == setup.digest
    (setup.checkout / "continuity" / "plan.py").write_text("PLAN = 2\n")  # code again
    refused(setup, opened_files, "checkout_dirty")


@pytest.mark.parametrize("flag", ["--assume-unchanged", "--skip-worktree"])
def test_hiding_flags_are_refused(setup: Setup, opened_files: list[str], flag: str) -> None:
    git(setup.checkout, "update-index", flag, "continuity/plan.py")
    (setup.checkout / "continuity" / "plan.py").write_text("PLAN = 2\n")
    refused(setup, opened_files, "checkout_flags_refused")


def test_hiding_flags_outside_the_code_are_no_concern(
    setup: Setup, opened_files: list[str]
) -> None:
    git(setup.checkout, "update-index", "--assume-unchanged", "tracked.txt")
    (setup.checkout / "tracked.txt").write_text("hidden change to no code\n")
    assert setup.check()[1].digest == setup.digest


def test_not_a_checkout(setup: Setup, opened_files: list[str], tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    refused(setup, opened_files, "checkout_unknown", checkout=plain)


def test_guards_fire_in_order(setup: Setup, opened_files: list[str]) -> None:
    # Everything wrong at once: the CI refusal comes first.
    refused(
        setup,
        opened_files,
        "real_refused_ci",
        environ={"CI": ""},
        confirm=None,
        credentials=None,
        output=None,
    )
    hosted = plan_from_request(PlanRequest.of(setup.options(**HOSTED)))
    refused(
        setup, opened_files, "credentials_required", confirm=None, credentials=None, plan=hosted
    )


def test_run_real_refuses_before_writing_anything(setup: Setup, opened_files: list[str]) -> None:
    with pytest.raises(RealModeError) as caught:
        run_real(
            setup.plan,
            setup.store,
            RealRequest(
                confirm=setup.digest,
                credentials=setup.credentials,
                output=setup.output,
                checkout=setup.checkout,
                environ={"CI": "1"},
            ),
        )
    assert caught.value.code == "real_refused_ci"
    assert not Path(setup.output).exists()
    assert setup.credentials not in opened_files


def test_doit_units_real_refuses_under_ci(tmp_path: Path, credentials: Path) -> None:
    env_ci = {"CI": ""}
    result = doit_with_env(
        tmp_path,
        env_ci,
        "units",
        "--real",
        "--provider",
        "openai-chat",
        "--credentials",
        str(credentials),
        "--confirm-plan",
        "0" * 64,
        "--out",
        str(tmp_path / "run"),
    )
    assert result.returncode != 0
    assert "real_refused_ci" in result.stdout + result.stderr
    assert not (tmp_path / "run").exists()


def test_doit_units_real_provider_without_real_flag(tmp_path: Path) -> None:
    result = doit(tmp_path, "units", "--provider", "openai-chat", check=False)
    assert result.returncode != 0
    assert "real_flag_required" in result.stdout + result.stderr
    result = doit(tmp_path, "units", "--cost-cap", "5", check=False)  # a cap is for --real
    assert result.returncode != 0
    assert "real_flag_required" in result.stdout + result.stderr
    assert "--cost-cap" in result.stdout + result.stderr
    result = doit(tmp_path, "units", "--request-timeout", "60", check=False)  # real only
    assert result.returncode != 0
    assert "real_flag_required" in result.stdout + result.stderr
    assert "--request-timeout" in result.stdout + result.stderr
    result = doit(tmp_path, "units", "--repeats", "0", check=False)
    assert result.returncode != 0
    assert "plan_invalid" in result.stdout + result.stderr


def doit_with_env(tmp_path: Path, extra: dict[str, str], *args: str) -> Any:
    from tests.graph.test_dodo import doit_command, doit_env

    return subprocess.run(
        doit_command(*args),
        env={**doit_env(tmp_path), **extra},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
