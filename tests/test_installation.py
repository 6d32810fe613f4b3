"""The code a run binds, from a checkout and from the tree a wheel installs.

The module fixture builds this checkout's wheel (``pip wheel``, from a copy of the files
the wheel is built from) and installs it with ``pip install --target`` into a
temporary site directory: a real distribution with pip's own RECORD, read through
importlib.metadata as any installed one is.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import continuity
from continuity.errors import RealModeError
from continuity.installation import (
    CODE_PATHS,
    TREE_DIR,
    TREE_PTH,
    InstalledCode,
    installed_code,
    is_installed_tree,
    tree_root,
)
from continuity.plan.guards import check_checkout
from continuity.runner.manifest import code_revision
from tests.conftest import REPO, git

BUILD_FILES = ("setup.py", "MANIFEST.in", "README.md")


@dataclass(frozen=True)
class Installed:
    wheel: Path
    site: Path

    @property
    def tree(self) -> Path:
        return self.site / TREE_DIR


def _code_files() -> list[str]:
    listed = subprocess.run(
        # tracked files and those not yet added (not ignored): what a build copies
        ["git", "-C", str(REPO), "ls-files", "-z", "-co", "--exclude-standard", "--", *CODE_PATHS],
        capture_output=True,
        check=True,
    ).stdout.decode("utf-8")
    return sorted(path for path in listed.split("\0") if path)


def _pip(*args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"
    for relative in [*_code_files(), *BUILD_FILES]:  # what a clean clone holds
        (source / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / relative, source / relative)
    _pip("wheel", "--no-deps", "-w", str(root / "dist"), str(source))
    (wheel,) = (root / "dist").glob("continuity-*.whl")
    _pip("install", "--no-deps", "--no-compile", "--target", str(root / "site"), str(wheel))
    yield Installed(wheel, root / "site")


@pytest.mark.xdist_group("installed_wheel")  # one worker builds the wheel
def test_the_wheel_ships_every_code_file_in_the_tree_and_nothing_beside_it(
    installed: Installed,
) -> None:
    names = zipfile.ZipFile(installed.wheel).namelist()
    tree = sorted(n.removeprefix(f"{TREE_DIR}/") for n in names if n.startswith(f"{TREE_DIR}/"))
    assert tree == _code_files()
    others = {n for n in names if not n.startswith(f"{TREE_DIR}/")}
    assert TREE_PTH in others
    assert all(n == TREE_PTH or n.startswith("continuity-0.1.0.dist-info/") for n in others)
    assert (installed.site / TREE_PTH).read_text(encoding="utf-8") == f"{TREE_DIR}\n"


@pytest.mark.xdist_group("installed_wheel")  # one worker builds the wheel
def test_an_installed_tree_binds_its_version_and_record_hashes(installed: Installed) -> None:
    code = installed_code(installed.tree)
    assert code is not None and is_installed_tree(installed.tree)
    assert code.version == continuity.__version__
    assert code.files == len(_code_files()) and code.modified == ()
    assert code.label == f"{code.version}+{code.files_digest}" and len(code.files_digest) == 64
    assert code_revision(installed.tree) == (code.label, False)
    check_checkout(installed.tree)  # real mode's guard 9 passes: no git needed


def _refused_as_modified(
    tree: Path, before: InstalledCode | None, modified: tuple[str, ...]
) -> RealModeError:
    """The installed code at `tree` differs from what was shipped by `modified`: its
    binding is still what was shipped, its revision says modified, and real mode refuses
    it with ``installed_code_modified`` (returned, for the location and message)."""
    code = installed_code(tree)
    assert code is not None and before is not None
    assert code.modified == modified
    assert code.files_digest == before.files_digest  # the binding is what was shipped
    assert code_revision(tree) == (code.label, True)
    with pytest.raises(RealModeError) as caught:
        check_checkout(tree)
    assert caught.value.code == "installed_code_modified"
    return caught.value


@pytest.mark.xdist_group("installed_wheel")  # one worker builds the wheel
def test_a_modified_or_missing_installed_file_is_refused(installed: Installed) -> None:
    fixture = installed.tree / "fixtures" / "pricing" / "catalog.json"
    module = installed.tree / "continuity" / "installation.py"
    before = installed_code(installed.tree)
    original = fixture.read_bytes()
    try:
        fixture.write_bytes(original + b" ")
        module.rename(module.with_suffix(".moved"))
        refused = _refused_as_modified(
            installed.tree,
            before,
            (  # changed and missing in RECORD order, then added
                "continuity/installation.py",
                "fixtures/pricing/catalog.json",
                "continuity/installation.moved",
            ),
        )
        assert refused.location.startswith(str(installed.tree))
    finally:
        fixture.write_bytes(original)
        module.with_suffix(".moved").rename(module)
    assert installed_code(installed.tree) == before


@pytest.mark.xdist_group("installed_wheel")  # one worker builds the wheel
def test_a_file_added_to_the_installed_code_is_refused_and_bytecode_is_not(
    installed: Installed,
) -> None:
    """A file RECORD does not list, under the code paths, is a change (as an untracked
    file in a checkout is ``checkout_dirty``); bytecode Python writes is not, nor is a
    file beside the code paths."""
    before = installed_code(installed.tree)
    assert before is not None and before.modified == ()
    package = installed.tree / "continuity"
    added = [package / "extra_mod.py", installed.tree / "fixtures" / "new" / "plan.json"]
    linked = installed.tree / "rules" / "linked"  # a link to a folder is never entered
    bytecode = [package / "__pycache__" / "extra.cpython-311.pyc", package / "stray.pyc"]
    beside = installed.tree / "notes.txt"
    try:
        for path in [*added, *bytecode, beside]:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("X = 1\n")
        linked.symlink_to(installed.tree / "fixtures", target_is_directory=True)
        refused = _refused_as_modified(
            installed.tree,
            before,
            ("continuity/extra_mod.py", "fixtures/new/plan.json", "rules/linked"),
        )
        assert refused.location == str(installed.tree / "continuity" / "extra_mod.py")
        assert "not listed" in refused.message and "remove added" in refused.message
        for path in added:
            path.unlink()
        linked.unlink()
        assert installed_code(installed.tree) == before  # bytecode and notes are no code
        check_checkout(installed.tree)
    finally:
        for path in [*added, *bytecode, beside]:
            path.unlink(missing_ok=True)
        shutil.rmtree(installed.tree / "fixtures" / "new", ignore_errors=True)
        linked.unlink(missing_ok=True)
    assert installed_code(installed.tree) == before


@pytest.mark.xdist_group("installed_wheel")  # one worker builds the wheel
def test_the_installed_console_entry_runs_its_tasks_in_the_working_directory(
    installed: Installed, tmp_path: Path
) -> None:
    """``continuity list`` through the installed package (its .pth processed as pip's
    site directory would), from an empty directory: the tasks of the installed tree,
    the store in the working directory and nothing written into the tree."""
    program = (
        "import site, sys; site.addsitedir(sys.argv[1]); import continuity; "
        "print(continuity.__file__, flush=True); "
        "from continuity.__main__ import main; sys.exit(main(['list']))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONTINUITY_", "DOIT"))}
    env.pop("PYTHONPATH", None)
    done = subprocess.run(
        [sys.executable, "-I", "-c", program, str(installed.site)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    first, *tasks = done.stdout.splitlines()
    assert Path(first).is_relative_to(installed.tree)
    assert any(line.split()[0] == "offline_contract" for line in tasks if line.strip())
    assert (tmp_path / "store").is_dir()
    assert not (installed.tree / "store").exists() and not (installed.tree / "out").exists()
    # `-I` ignores $PYTHONDONTWRITEBYTECODE: the bytecode written in the tree is no change
    assert any(installed.tree.glob("continuity/__pycache__/*.pyc"))
    code = installed_code(installed.tree)
    assert code is not None and code.modified == ()


def test_a_checkout_is_no_installed_tree(tmp_path: Path) -> None:
    assert not is_installed_tree(tree_root()) and installed_code(tree_root()) is None
    fake = tmp_path / TREE_DIR  # the name and the .pth, but no distribution installed it
    (fake / "continuity").mkdir(parents=True)
    (tmp_path / TREE_PTH).write_text(f"{TREE_DIR}\n")
    assert is_installed_tree(fake) and installed_code(fake) is None
    assert code_revision(fake) == ("unknown", None)


def test_a_checkouts_revision_is_dirty_only_for_its_code(clean_checkout: Path) -> None:
    (clean_checkout / "rules").mkdir()
    (clean_checkout / "rules" / "units.py").write_text("UNITS = 1\n")
    git(clean_checkout, "add", ".")
    git(clean_checkout, "commit", "-q", "-m", "rules")
    commit, dirty = code_revision(clean_checkout)
    assert len(commit) == 40 and dirty is False
    (clean_checkout / "notes.txt").write_text("an untracked note\n")
    (clean_checkout / "tracked.txt").write_text("a tracked file that is no code, edited\n")
    assert code_revision(clean_checkout) == (commit, False)
    (clean_checkout / "rules" / "new.py").write_text("")  # untracked code
    assert code_revision(clean_checkout) == (commit, True)
    (clean_checkout / "rules" / "new.py").unlink()
    (clean_checkout / "rules" / "units.py").write_text("UNITS = 2\n")
    assert code_revision(clean_checkout) == (commit, True)
