"""`doit compare_register` over real git worktrees of this repository (issue 15, item 4).

Rpack is this repository's HEAD (with the witness added in a commit when HEAD lacks it);
R0 is Rpack with the guidance reversed and committed in its own worktree: the frozen
patch reversed with ``git apply --reverse --3way`` when it exists, else the witness
renamed away. Every refusal is a real git state; one real registration (two venvs) is
shared by the success tests.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from continuity.digest import value_digest
from continuity.errors import RoleError
from continuity.roles import register as register_module
from continuity.roles.guidance import GUIDANCE_PATCH, RENDERER_PATH, ROLE_PROTOCOL, WITNESS
from continuity.roles.register import (
    DEFAULT_SUITES,
    REGISTRATION_SCHEMA,
    ROLE_NAMES,
    Registered,
    Registration,
    register,
    workload,
)
from continuity.roles.register_build import PTH_FILE, build_checkout
from continuity.roles.table import ROLES
from continuity.runner.manifest import code_revision
from continuity.store import Store
from tests.conftest import REPO

_COMMIT = ["-c", "user.name=roles test", "-c", "user.email=roles@example.invalid", "commit"]


def _git(where: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(where), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def _commit(where: Path, message: str) -> str:
    _git(where, "add", "-A")
    _git(where, *_COMMIT, "-q", "-m", message)
    return _git(where, "rev-parse", "HEAD")


class Pair(msgspec.Struct, frozen=True):
    root: Path
    r0: Path
    r0_sha: str
    rpack: Path
    rpack_sha: str
    docs: Path  # Rpack plus a README change: a non-guidance delta
    docs_sha: str


def _worktree(root: Path, name: str, revision: str) -> Path:
    path = root / name
    _git(REPO, "worktree", "add", "--detach", "-q", str(path), revision)
    return path


def _make_pair(root: Path) -> Pair:
    rpack = _worktree(root, "rpack", _git(REPO, "rev-parse", "HEAD"))
    renderer = rpack / RENDERER_PATH
    if WITNESS not in renderer.read_text(encoding="utf-8"):
        with renderer.open("a", encoding="utf-8") as handle:
            handle.write(f'\n{WITNESS} = "use ConversationHistory get with a packed id"\n')
        _commit(rpack, "test: add the witness")
    rpack_sha = _git(rpack, "rev-parse", "HEAD")
    r0 = _worktree(root, "r0", rpack_sha)
    patch = REPO / GUIDANCE_PATCH
    if patch.is_file():
        _git(r0, "apply", "--reverse", "--3way", str(patch))
    else:
        text = (r0 / RENDERER_PATH).read_text(encoding="utf-8")
        (r0 / RENDERER_PATH).write_text(text.replace(WITNESS, "PACK_GUIDANCE_REMOVED"), "utf-8")
    r0_sha = _commit(r0, "test(roles): isolate pre-guidance code")
    docs = _worktree(root, "docs", rpack_sha)
    with (docs / "README.md").open("a", encoding="utf-8") as handle:
        handle.write("\nA docs-only change.\n")
    docs_sha = _commit(docs, "test: docs only")
    return Pair(root, r0, r0_sha, rpack, rpack_sha, docs, docs_sha)


@contextlib.contextmanager
def checkout_pair(root: Path) -> Iterator[Pair]:
    """R0 and Rpack as worktrees under `root`; every worktree made there (the pair and
    any a test adds) is removed afterwards, even when the test failed."""
    try:
        yield _make_pair(root)
    finally:
        for name in ("r0", "rpack", "docs", "other"):
            if (root / name).exists():
                subprocess.run(
                    ["git", "-C", str(REPO), "worktree", "remove", "--force", str(root / name)],
                    capture_output=True,
                    check=False,
                )
        subprocess.run(["git", "-C", str(REPO), "worktree", "prune"], check=False)


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    with checkout_pair(tmp_path_factory.mktemp("checkouts")) as made:
        yield made


def _refused(
    pair: Pair,
    tmp_path: Path,
    *,
    r0: tuple[Path, str] | None = None,
    rpack: tuple[Path, str] | None = None,
    output: str | None = None,
) -> RoleError:
    with pytest.raises(RoleError) as caught:
        register(
            Store(tmp_path / "store"),
            r0 or (pair.r0, pair.r0_sha),
            rpack or (pair.rpack, pair.rpack_sha),
            output or str(tmp_path / "registration"),
            workload(["original"], ["brightline-return"], 1),
        )
    return caught.value


def test_a_short_sha_or_a_branch_name_is_refused(pair: Pair, tmp_path: Path) -> None:
    for number, given in enumerate((pair.r0_sha[:12], "main", pair.r0_sha.upper())):
        # one output directory per case (a SHA's short and upper-case forms can share
        # their first characters, e.g. when they are digits)
        error = _refused(pair, tmp_path / f"case-{number}", r0=(pair.r0, given))
        assert (error.code, error.location) == ("role_revision_invalid", "--r0-revision")


def test_a_sha_that_is_not_head_is_refused(pair: Pair, tmp_path: Path) -> None:
    error = _refused(pair, tmp_path, r0=(pair.r0, pair.rpack_sha))
    assert (error.code, error.location) == ("role_revision_invalid", str(pair.r0))


def test_a_modified_file_is_dirty(pair: Pair, tmp_path: Path) -> None:
    target = pair.r0 / "README.md"
    original = target.read_bytes()
    target.write_bytes(original + b"\nedited\n")
    try:
        error = _refused(pair, tmp_path)
    finally:
        target.write_bytes(original)
    assert (error.code, error.location) == ("role_checkout_dirty", str(pair.r0))


def test_an_untracked_file_is_dirty(pair: Pair, tmp_path: Path) -> None:
    stray = pair.rpack / "fixtures" / "untracked.txt"  # not ignored: status lists it
    stray.write_text("stray\n", encoding="utf-8")
    try:
        error = _refused(pair, tmp_path)
    finally:
        stray.unlink()
    assert (error.code, error.location) == ("role_checkout_dirty", str(pair.rpack))


@pytest.mark.parametrize("flag", ["assume-unchanged", "skip-worktree"])
def test_an_index_flag_that_hides_changes_is_refused(pair: Pair, tmp_path: Path, flag: str) -> None:
    _git(pair.r0, "update-index", f"--{flag}", "README.md")
    try:
        error = _refused(pair, tmp_path)
    finally:
        _git(pair.r0, "update-index", f"--no-{flag}", "README.md")
    assert (error.code, error.location) == ("role_checkout_flags", str(pair.r0))


def test_a_docs_only_delta_is_outside_the_guidance(pair: Pair, tmp_path: Path) -> None:
    error = _refused(
        pair, tmp_path, r0=(pair.rpack, pair.rpack_sha), rpack=(pair.docs, pair.docs_sha)
    )
    assert error.code == "role_diff_outside_guidance"
    assert "README.md" in error.message


def test_a_guidance_delta_plus_a_docs_change_is_refused(pair: Pair, tmp_path: Path) -> None:
    error = _refused(pair, tmp_path, rpack=(pair.docs, pair.docs_sha))
    assert error.code == "role_diff_outside_guidance"


def test_reversed_roles_are_refused(pair: Pair, tmp_path: Path) -> None:
    error = _refused(pair, tmp_path, r0=(pair.rpack, pair.rpack_sha), rpack=(pair.r0, pair.r0_sha))
    assert (error.code, error.location) == ("lookup_rpack_direction_invalid", str(pair.r0))


def test_the_same_tree_twice_is_no_treatment(pair: Pair, tmp_path: Path) -> None:
    error = _refused(pair, tmp_path, r0=(pair.rpack, pair.rpack_sha))
    assert error.code == "role_no_difference"


def test_a_renderer_change_without_the_witness_is_refused(pair: Pair, tmp_path: Path) -> None:
    other = _worktree(pair.root, "other", pair.r0_sha)
    try:
        with (other / RENDERER_PATH).open("a", encoding="utf-8") as handle:
            handle.write("\n# a renderer change that is not the guidance\n")
        sha = _commit(other, "test: renderer without witness")
        error = _refused(pair, tmp_path, rpack=(other, sha))
    finally:
        _git(REPO, "worktree", "remove", "--force", str(other))
    assert error.code == "role_witness_missing"


def test_a_checkout_without_the_role_protocol_is_incompatible(pair: Pair, tmp_path: Path) -> None:
    old = _worktree(pair.root, "other", pair.r0_sha)
    try:
        declared = old / "continuity" / "roles" / "guidance.py"
        text = declared.read_text(encoding="utf-8").replace(ROLE_PROTOCOL, "an-older-protocol")
        declared.write_text(text, encoding="utf-8")
        sha = _commit(old, "test: an older checkout")
        error = _refused(pair, tmp_path, r0=(old, sha))
    finally:
        _git(REPO, "worktree", "remove", "--force", str(old))
    assert (error.code, error.location) == ("role_protocol_missing", str(old))


def test_a_directory_that_is_not_a_checkout_top_is_refused(pair: Pair, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert _refused(pair, tmp_path, r0=(plain, pair.r0_sha)).code == "role_checkout_unknown"
    inner = pair.r0 / "continuity"
    error = _refused(pair, tmp_path / "inner", r0=(inner, pair.r0_sha))
    assert (error.code, error.location) == ("role_checkout_unknown", str(inner))


def test_a_delta_that_misses_the_renderer_is_refused(
    pair: Pair, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Only the renderer is a guidance path today; widened, a delta in another guidance
    # path alone still has to touch the renderer.
    monkeypatch.setattr(register_module, "GUIDANCE_PATHS", (RENDERER_PATH, "README.md"))
    error = _refused(
        pair, tmp_path, r0=(pair.rpack, pair.rpack_sha), rpack=(pair.docs, pair.docs_sha)
    )
    assert error.code == "role_renderer_untouched"


def test_a_build_that_cannot_make_its_venv_fails(pair: Pair, tmp_path: Path) -> None:
    (tmp_path / "venv").write_text("in the way\n", encoding="utf-8")
    with pytest.raises(RoleError) as caught:
        build_checkout(pair.r0, pair.r0_sha, tmp_path)
    assert (caught.value.code, caught.value.location) == (
        "role_build_failed",
        str(tmp_path / "venv"),
    )


def test_the_output_directory_rules(pair: Pair, tmp_path: Path) -> None:
    existing = tmp_path / "exists"
    existing.mkdir()
    assert _refused(pair, tmp_path, output=str(existing)).code == "role_output_exists"
    assert _refused(pair, tmp_path, output="relative/out").code == "role_output_not_absolute"
    inside = str(pair.rpack / "out" / "registration")
    assert _refused(pair, tmp_path, output=inside).code == "role_output_inside_checkout"
    alias = tmp_path / "alias"
    alias.symlink_to(pair.r0)
    through = _refused(pair, tmp_path, output=str(alias / "new" / "registration"))
    assert through.code == "role_output_inside_checkout"
    assert not (pair.r0 / "new").exists()  # refused before anything was reserved


def test_an_unknown_suite_is_refused() -> None:
    from continuity.errors import UsageError

    with pytest.raises(UsageError) as caught:
        workload(["nope"], [], None)
    assert caught.value.code == "suite_unknown"


def test_defaults_are_the_full_workload() -> None:
    work = workload([], [], None)
    assert tuple(work.suites) == DEFAULT_SUITES
    assert (work.repeats, work.judge, work.restricted, work.probe_limit) == (1, None, False, None)


def _doit(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CONTINUITY_STORE": str(tmp_path / "store")}
    command = [sys.executable, "-m", "doit", "-f", str(REPO / "dodo.py"), "compare_register"]
    return subprocess.run(
        [*command, *args], cwd=REPO, env=env, capture_output=True, text=True, check=False
    )


def _smoke_args(pair: Pair, output: Path) -> list[str]:
    return [
        *("--r0", str(pair.r0), "--r0-revision", pair.r0_sha),
        *("--rpack", str(pair.rpack), "--rpack-revision", pair.rpack_sha),
        *("--output", str(output)),
        *("--suites", "original", "--trace", "brightline-return", "--probe-limit", "1"),
    ]


@pytest.fixture(scope="module")
def registered(
    pair: Pair, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, subprocess.CompletedProcess[str]]:
    base = tmp_path_factory.mktemp("registered")
    return base, _doit(base, *_smoke_args(pair, base / "registration"))


def test_a_restricted_registration_binds_both_checkouts(
    pair: Pair, registered: tuple[Path, subprocess.CompletedProcess[str]]
) -> None:
    base, result = registered
    assert result.returncode == 0, result.stdout + result.stderr
    data = (base / "registration" / "registration.json").read_bytes()
    lines = result.stdout.strip().splitlines()
    assert f"sha256 {hashlib.sha256(data).hexdigest()}" in lines
    assert lines[-1] == f"registration in {base / 'registration' / 'registration.json'}"
    registration = msgspec.json.decode(data, type=Registration)
    assert f"registration_digest {value_digest(registration)}" in lines
    assert data == msgspec.json.encode(registration, order="sorted")  # canonical
    assert registration.schema == REGISTRATION_SCHEMA
    assert (registration.r0.revision, registration.rpack.revision) == (pair.r0_sha, pair.rpack_sha)
    assert registration.differing == [RENDERER_PATH]
    assert tuple(role.name for role in registration.roles) == ROLE_NAMES
    assert tuple(registration.roles) == ROLES  # arm, code and soul of each
    assert ROLE_NAMES == ("native", "pack", "pack-only", "soul-only", "shipping", "native-soul")
    work = registration.workload
    assert (work.suites, work.traces, work.probe_limit, work.restricted) == (
        ["original"],
        ["brightline-return"],
        1,
        True,
    )
    assert (work.repeats, work.judge, work.effort) == (1, None, "low")
    assert set(registration.digests.scorer) >= {"continuity/probes/scoring.py"}
    assert "missing" not in registration.digests.budget.values()
    r0_build, rpack_build = registration.builds["r0"], registration.builds["rpack"]
    assert r0_build.files_digest != rpack_build.files_digest  # the renderer differs
    renderer = RENDERER_PATH
    r0_blob = (pair.r0 / renderer).read_bytes()
    assert r0_build.files[renderer] == hashlib.sha256(r0_blob).hexdigest()
    assert Path(r0_build.python).is_relative_to(base / "registration" / "build" / "r0")
    # The whole committed tree is exported and hashed (the package finds its fixtures,
    # rules and dodo.py beside it), with the commit in REVISION since it is no checkout.
    src = Path(r0_build.src)
    assert src.is_relative_to((base / "registration" / "build" / "r0").resolve())
    assert {"dodo.py", "rules/roles.py", "REVISION", "pyproject.toml"} <= set(r0_build.files)
    assert (src / "REVISION").read_text(encoding="utf-8") == f"{pair.r0_sha}\n"
    assert code_revision(src) == (pair.r0_sha, False)
    assert code_revision(Path(rpack_build.src)) == (pair.rpack_sha, False)
    pth = Path(r0_build.site_packages) / PTH_FILE
    assert pth.read_text(encoding="utf-8").strip() == str(src)
    assert r0_build.pth_sha256 == hashlib.sha256(pth.read_bytes()).hexdigest()
    json.loads(data)  # plain JSON for other tools


def test_the_registration_is_a_stored_artifact_found_again(
    pair: Pair, registered: tuple[Path, subprocess.CompletedProcess[str]]
) -> None:
    base, result = registered
    assert result.returncode == 0, result.stdout + result.stderr
    key = next(
        line.split()[-1] for line in result.stdout.splitlines() if line.startswith("store key")
    )
    store = Store(base / "store")
    entry = store.get_action(key)
    assert entry is not None and entry.kind == "lookup-registration"
    data = (base / "registration" / "registration.json").read_bytes()
    assert store.get_blob(entry.output.digest) == data
    again = register(
        store,
        (pair.r0, pair.r0_sha),
        (pair.rpack, pair.rpack_sha),
        str(base / "again"),
        workload(["original"], ["brightline-return"], 1),
    )
    assert isinstance(again, Registered) and again.key == key


def test_doit_prints_the_coded_refusal(pair: Pair, tmp_path: Path) -> None:
    args = _smoke_args(pair, tmp_path / "out")
    args[3] = pair.r0_sha[:10]
    result = _doit(tmp_path, *args)
    assert result.returncode != 0
    assert "role_revision_invalid" in result.stdout + result.stderr
    assert not (tmp_path / "out" / "build").exists()
