"""A fresh build of one checkout: its own venv importing the committed tree at the SHA.

The WHOLE committed tree of the registered SHA (``git archive``, never the work tree's
files) is exported to ``<target>/src``, with a ``REVISION`` file holding the commit
(the export is no git checkout; `continuity.runner.manifest.code_revision` reads it).
The package needs its tree: it finds ``fixtures/``, ``rules/`` and ``dodo.py``
relative to itself, and a role child runs ``<venv>/bin/python -I -m doit -f
<target>/src/dodo.py`` from its own directory, so nothing of the checkout is imported.
The venv is new (``python3 -m venv --system-site-packages --without-pip``: the
dependencies come from the machine, offline) and imports the export through one
``.pth`` file in its site-packages (pip is not used: a pure-Python package needs no
build step). The receipt binds every exported file's sha256, the ``.pth`` file's, and
the interpreter, checked by importing the package in that interpreter from outside any
checkout.
"""

from __future__ import annotations

import hashlib
import io
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import msgspec

from continuity.errors import RoleError
from continuity.installation import tree_hashes
from continuity.roles.register_git import archive

__all__ = [
    "PACKAGE",
    "PTH_FILE",
    "REVISION_FILE",
    "BuildReceipt",
    "build_checkout",
    "build_hashes",
]

PACKAGE = "continuity"
PTH_FILE = "continuity-build.pth"
REVISION_FILE = "REVISION"
_PROBE = (
    "import continuity, sys; print(continuity.__file__); "
    "print(sys.executable); print('.'.join(map(str, sys.version_info[:3])))"
)


class BuildReceipt(msgspec.Struct, frozen=True, kw_only=True):
    """One checkout's fresh build: where, which interpreter, the exported file hashes.

    Attributes:
        venv: the venv's directory.
        python: the venv's interpreter (what a role run launches).
        python_version: its version (major.minor.micro).
        site_packages: the venv's site-packages, holding `PTH_FILE`.
        src: the exported committed tree (with `REVISION_FILE`) the venv imports.
        files: path below `src` -> sha256 for every file of the export, sorted by path.
        pth_sha256: the sha256 of ``site_packages/PTH_FILE``.
        files_digest: sha256 of the sorted ``path\\0sha256\\n`` lines (the export's
            identity; the ``.pth``, which names where the export lies, is bound by
            `pth_sha256` and verified with it, not part of the identity).
        seconds: how long the build took (not part of any key).
    """

    venv: str
    python: str
    python_version: str
    site_packages: str
    src: str
    files: dict[str, str]
    pth_sha256: str
    files_digest: str
    seconds: float


def _run(args: list[str], location: str) -> str:
    result = subprocess.run(args, capture_output=True, text=True, check=False, cwd="/")
    if result.returncode != 0:
        tail = result.stderr.strip().splitlines()[-1:]
        raise RoleError(
            f"{Path(args[0]).name} exited {result.returncode}: {tail}",
            code="role_build_failed",
            location=location,
        )
    return result.stdout


def _files_digest(files: dict[str, str]) -> str:
    lines = "".join(f"{path}\0{digest}\n" for path, digest in sorted(files.items()))
    return hashlib.sha256(lines.encode("utf-8", "surrogateescape")).hexdigest()


def build_hashes(receipt: BuildReceipt) -> tuple[dict[str, str], str]:
    """The build's files and ``.pth`` hashes as they are now (empty / ``missing`` when
    gone), to compare with `receipt`'s."""
    src, pth = Path(receipt.src), Path(receipt.site_packages) / PTH_FILE
    files = tree_hashes(src) if src.is_dir() and not src.is_symlink() else {}
    pth_sha256 = hashlib.sha256(pth.read_bytes()).hexdigest() if pth.is_file() else "missing"
    return files, pth_sha256


def build_checkout(checkout: Path, revision: str, target: Path) -> BuildReceipt:
    """Export `checkout`'s committed tree at `revision` to ``target/src`` and make a new
    venv at ``target/venv`` that imports it.

    Raises:
        RoleError: ``role_build_failed`` when the venv cannot be made, the package
            does not install, or the venv's interpreter imports another copy of it.
    """
    started = time.monotonic()
    venv = target / "venv"
    location = str(venv)
    _run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", location],
        location,
    )
    python = venv / "bin" / "python"
    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site_packages = Path(_run([str(python), "-I", "-c", purelib], location).strip())
    src = target / "src"
    src.mkdir()
    with tarfile.open(fileobj=io.BytesIO(archive(checkout, revision, "."))) as tar:
        tar.extractall(src, filter="data")
    (src / REVISION_FILE).write_text(f"{revision}\n", encoding="utf-8")
    # The venv's site-packages is read before the system's, so its .pth puts the export
    # ahead of any other installed copy (the probe below proves it).
    (site_packages / PTH_FILE).write_text(f"{src.resolve()}\n", encoding="utf-8")
    # -I: no PYTHONPATH, no user site, no script directory; -B: no bytecode in the export;
    # cwd "/" is no checkout, so the import must find the export.
    probe = [str(python), "-I", "-B", "-c", _PROBE]
    imported, executable, version = _run(probe, location).split()
    if Path(imported).parent != src.resolve() / PACKAGE:
        raise RoleError(
            f"the venv's interpreter imports {imported}, not the fresh build",
            code="role_build_failed",
            location=location,
        )
    files = tree_hashes(src)
    if f"{PACKAGE}/__init__.py" not in files:
        raise RoleError(
            f"the export at {revision[:12]} holds no {PACKAGE} package",
            code="role_build_failed",
            location=location,
        )
    pth_sha256 = hashlib.sha256((site_packages / PTH_FILE).read_bytes()).hexdigest()
    return BuildReceipt(
        venv=location,
        python=executable,
        python_version=version,
        site_packages=str(site_packages),
        src=str(src.resolve()),
        files=files,
        pth_sha256=pth_sha256,
        files_digest=_files_digest(files),
        seconds=round(time.monotonic() - started, 3),
    )
