"""`doit dry_run` ends with the command that runs the plan: the same plan options (so the
same digest) and, for a real plan, ``--real --confirm-plan DIGEST`` and an ``--out``."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from doit.cmdparse import CmdOption, TaskParse

from continuity.commands.planning import next_command
from continuity.plan.from_request import plan_from_request
from continuity.plan.plan import plan_digest
from continuity.plan.request import PlanRequest
from rules.plan import task_dry_run
from rules.units import task_units
from tests.conftest import REPO
from tests.plan.test_plan import GUARDED_DOIT


def _parse(task: Any, args: list[str]) -> dict[str, Any]:
    """The options doit's own parser gives `task` for `args` (defaults filled in)."""
    options, rest = TaskParse([CmdOption(p) for p in task()["params"]]).parse(args)
    assert rest == []
    return dict(options)


CASES = [
    [],
    ["--suite", "hard", "--seeds", "101-102", "--arms", "native,compaction-1", "--repeats", "2"],
    ["--probe-limit", "1", "--reader", "openai:gpt-4o", "--effort", "high", "--judge", "openai:j"],
    ["--probe-mode", "lookup-allowed-v1", "--lookup-reader", "alternate", "--probe-limit", "1"],
    [
        "--provider",
        "anthropic",
        "--base-url",
        "http://127.0.0.1:9",
        "--credentials",
        "/tmp/has space/creds.json",
        "--reader",
        "anthropic:claude-sonnet-4-5",
        "--judge-effort",
        "high",
        "--judge",
        "anthropic:claude-haiku-4-5",
        "--alternate",
        "openai:x",
        "--arms",
        "native",
        "--store",
        "/tmp/somewhere/store",
    ],
]


@pytest.mark.parametrize("args", CASES, ids=lambda a: " ".join(a)[:50] or "default")
def test_the_printed_command_binds_the_same_plan(args: list[str], tmp_path: Path) -> None:
    dry = _parse(task_dry_run, args)
    plan = plan_from_request(PlanRequest.of(dry))
    digest = plan_digest(plan)
    words = shlex.split(next_command(PlanRequest.of(dry), plan, digest))
    assert words[:4] == ["python3", "-m", "doit", "units"]
    units = _parse(task_units, words[4:])
    assert plan_digest(plan_from_request(PlanRequest.of(units))) == digest
    assert units["store"] == dry["store"]
    if plan.mode == "real":
        assert units["real"] is True and units["confirm_plan"] == digest
        out = Path(units["out"])
        assert out.is_absolute() and REPO not in out.parents and digest[:16] in out.name
    else:  # offline runs need no confirmation
        assert units["real"] is False and units["confirm_plan"] == ""
    # Only what the user changed is spelled out.
    assert "--effort" not in words or "--effort" in args


def test_a_custom_catalog_is_carried_into_the_real_command(tmp_path: Path) -> None:
    catalog = tmp_path / "catalog.json"
    catalog.write_bytes((REPO / "fixtures" / "pricing" / "catalog.json").read_bytes())
    args = ["--provider", "openai-chat", "--credentials", "/c.json", "--pricing", str(catalog)]
    dry = _parse(task_dry_run, args)
    plan = plan_from_request(PlanRequest.of(dry))
    assert plan.pricing is not None
    words = shlex.split(next_command(PlanRequest.of(dry), plan, plan_digest(plan)))
    assert words[words.index("--pricing") + 1] == str(catalog)
    assert plan_digest(
        plan_from_request(PlanRequest.of(_parse(task_units, words[4:])))
    ) == plan_digest(plan)


def test_the_users_out_is_kept_offline_and_outside_the_checkout(tmp_path: Path) -> None:
    """The run goes where the dry run was told to write: offline always, real when that
    directory is outside the checkout (inside, real mode would refuse it)."""
    outside = str(tmp_path / "runs")
    inside = str(REPO / "out")
    real = ["--provider", "openai-chat", "--credentials", "/c.json"]
    for args, expected in [
        (["--out", outside], outside),
        ([*real, "--out", outside], outside),
        ([*real, "--out", inside], None),
        ([], None),
    ]:
        dry = _parse(task_dry_run, args)
        plan = plan_from_request(PlanRequest.of(dry))
        words = shlex.split(next_command(PlanRequest.of(dry), plan, plan_digest(plan)))
        units = _parse(task_units, words[4:])
        if expected is not None:
            assert units["out"] == expected, args
        elif plan.mode == "real":  # the checkout's out/ replaced by a home directory
            assert REPO not in Path(units["out"]).parents and units["out"] != inside
        else:
            assert "--out" not in words


def _doit(tmp_path: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    """doit in a process where any socket connection aborts it; no CI variable, so the
    real-mode guards run past guard 1 (the credentials file never exists)."""
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env.update(CONTINUITY_STORE=str(tmp_path / "store"), CONTINUITY_OUT=str(tmp_path / "out"))
    return subprocess.run(
        [sys.executable, "-c", GUARDED_DOIT, str(REPO), str(tmp_path / "opened.json"), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )


def test_the_printed_command_passes_the_confirmation_guards(tmp_path: Path) -> None:
    """Run `doit dry_run`, then the command it printed: the plan's digest matches and its
    dry run is found (guards 4 to 6), so the run stops only at guard 7, the missing
    credentials file, before any credential read or connection."""
    credentials = tmp_path / "absent.json"
    dry = _doit(
        tmp_path,
        [
            "dry_run",
            "--provider",
            "openai-chat",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--credentials",
            str(credentials),
            "--reader",
            "openai:gpt-4o",
            "--arms",
            "native",
            "--probe-limit",
            "1",
            "--repeats",
            "2",
        ],
    )
    assert dry.returncode == 0, dry.stdout + dry.stderr
    lines = dry.stdout.splitlines()
    (digest,) = re.findall(r"confirmation digest: ([0-9a-f]{64})", dry.stdout)
    nexts = [line for line in lines if line.startswith("next: ")]
    assert len(nexts) == 1 and lines[-1].startswith("dry run in ")
    words = shlex.split(nexts[0].removeprefix("next: "))
    assert words[4:7] == ["--real", "--confirm-plan", digest]
    recorded = json.loads(Path(lines[-1].removeprefix("dry run in ")).read_text())
    assert recorded["digest"] == digest and recorded["prices"]["library"] == "genai-prices"
    ran = _doit(tmp_path, words[3:])
    output = ran.stdout + ran.stderr
    assert ran.returncode != 0
    assert "credentials_missing" in output, output
    assert "confirmation_" not in output
    assert "network access attempted" not in output
    assert str(credentials) not in json.loads((tmp_path / "opened.json").read_text())


def _clean_copy(tmp_path: Path) -> Path:
    """This working tree (tracked and new files, as they are now) committed into a fresh
    git checkout, so the real-mode checkout guards see a clean one."""
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-co", "--exclude-standard", "-z"],
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    root = tmp_path / "checkout"
    for name in filter(None, listed):
        source = REPO / name.decode()
        if source.is_file():
            target = root / name.decode()
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
    for args in (["init", "-q"], ["add", "-A"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)
    subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.invalid",
         "commit", "-q", "-m", "copy"],
        check=True, capture_output=True,
    )  # fmt: skip
    return root


@pytest.mark.slow
def test_the_printed_command_runs_verbatim_against_a_local_server(tmp_path: Path) -> None:
    """`doit dry_run` for a loopback server, without credentials (a local server needs
    none, and a credentials path is not bound); then its `next:` line, run word for word
    through doit, builds every unit; `doit aggregate` reports a real run."""
    from continuity.servers.wire import WireServer, serve_in_thread

    checkout = _clean_copy(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env.update(
        HOME=str(home),
        CONTINUITY_STORE=str(tmp_path / "store"),
        CONTINUITY_OUT=str(tmp_path / "out"),
    )

    def run(words: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            words, cwd=checkout, env=env, capture_output=True, text=True, timeout=600
        )

    app = WireServer(model="local-model", context_window=32_000)
    with serve_in_thread(app) as url:
        dry = run(
            [
                "python3", "-m", "doit", "dry_run", "--suite", "smoke", "--arms", "native",
                "--probe-limit", "1", "--provider", "openai-chat", "--base-url", f"{url}/v1",
                "--reader", "local:local-model", "--effort", "none",
                "--max-output-tokens", "64",
            ]
        )  # fmt: skip
        assert dry.returncode == 0, dry.stdout + dry.stderr
        (line,) = [x for x in dry.stdout.splitlines() if x.startswith("next: ")]
        words = shlex.split(line.removeprefix("next: "))
        assert "--credentials" not in words
        ran = run(words)
        assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "units: 1 units (1 run" in ran.stdout
    out = Path(words[words.index("--out") + 1])
    assert out.parent == home / "continuity-runs"
    assert app.calls and all(body.get("max_tokens") == 64 for _, body in app.calls)
    aggregated = run(["python3", "-m", "doit", "aggregate", "--run-dir", str(out)])
    assert aggregated.returncode == 0, aggregated.stdout + aggregated.stderr
    summary = (out / "summary.md").read_text()
    assert "Real run" in summary and "local:local-model" in summary
    assert "Local model." in summary  # an unlisted model on this machine


@pytest.mark.parametrize(
    ("base_url", "credentials", "noted"),
    [
        ("https://models.invalid/v1", False, True),
        ("https://models.invalid/v1", True, False),
        ("http://127.0.0.1:9/v1", False, False),
    ],
)
def test_the_dry_run_says_when_the_run_will_need_credentials(
    tmp_path: Path, base_url: str, credentials: bool, noted: bool
) -> None:
    """A plan is made without a credential; a hosted endpoint's dry run says, before the
    next command, that the run will need one (a loopback server needs none)."""
    args = ["dry_run", "--provider", "openai-chat", "--base-url", base_url]
    args += ["--reader", "openai:gpt-4o", "--arms", "native", "--probe-limit", "1"]
    if credentials:
        args += ["--credentials", str(tmp_path / "c.json")]
    dry = _doit(tmp_path, args)
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert ("credentials: " in dry.stdout) is noted


def test_the_printed_options_follow_the_documented_order() -> None:
    """The next command spells the plan options in the order `doit units --help` lists
    them, then the store."""
    from continuity.commands.planning import _NEXT_ORDER
    from rules.plan import PLAN_PARAMS

    assert list(_NEXT_ORDER) == [p["name"] for p in PLAN_PARAMS] + ["store"]


def test_from_an_installed_wheel_the_printed_command_runs_the_front_door(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An installed tree has no dodo.py in the working directory: the command runs the
    installed tasks through ``<this interpreter> -m continuity``."""
    import sys

    import continuity.installation

    monkeypatch.setattr(continuity.installation, "is_installed_tree", lambda root: True)
    dry = _parse(task_dry_run, ["--arms", "native"])
    plan = plan_from_request(PlanRequest.of(dry))
    words = shlex.split(next_command(PlanRequest.of(dry), plan, plan_digest(plan)))
    assert words[:4] == [sys.executable, "-m", "continuity", "units"]
