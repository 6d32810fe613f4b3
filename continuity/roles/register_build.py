"""A fresh build of one checkout: its own venv holding the package at the registered SHA.

The venv is new (``python3 -m venv --system-site-packages --without-pip``: the
dependencies come from the machine, offline) and the ``continuity`` package is
installed non-editable from the committed tree (``git archive`` of the registered
SHA, never the work tree's files), so nothing of the checkout is imported. pip is not
used: a pure-Python package needs no build step, and a pip install without build
isolation needs the ``wheel`` package, which an offline machine may lack. The receipt
binds every installed file's sha256 and the interpreter that imports them, checked by
importing the package in that interpreter from outside any checkout.
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
from continuity.roles.register_git import archive

__all__ = ["PACKAGE", "BuildReceipt", "build_checkout", "installed_hashes"]

PACKAGE = "continuity"
_PROBE = (
    "import continuity, sys; print(continuity.__file__); "
    "print(sys.executable); print('.'.join(map(str, sys.version_info[:3])))"
)


class BuildReceipt(msgspec.Struct, frozen=True, kw_only=True):
    """One checkout's fresh build: where, which interpreter, the installed file hashes.

    Attributes:
        venv: the venv's directory.
        python: the venv's interpreter (what a role run launches).
        python_version: its version (major.minor.micro).
        site_packages: where the package is installed.
        files: path below `site_packages` -> sha256, sorted by path.
        files_digest: sha256 of the sorted ``path\\0sha256\\n`` lines (the build's identity).
        seconds: how long the build took (not part of any key).
    """

    venv: str
    python: str
    python_version: str
    site_packages: str
    files: dict[str, str]
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


def installed_hashes(site_packages: Path) -> dict[str, str]:
    """sha256 of every file of the installed package, by path below `site_packages`."""
    root = site_packages / PACKAGE
    return {
        path.relative_to(site_packages).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


def _files_digest(files: dict[str, str]) -> str:
    lines = "".join(f"{path}\0{digest}\n" for path, digest in sorted(files.items()))
    return hashlib.sha256(lines.encode("utf-8", "surrogateescape")).hexdigest()


def build_checkout(checkout: Path, revision: str, target: Path) -> BuildReceipt:
    """Build `checkout` at `revision` into a new venv at ``target/venv``.

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
    data = archive(checkout, revision, PACKAGE)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(site_packages, filter="data")
    # -I: no PYTHONPATH, no user site, no script directory; cwd "/" is no checkout, so
    # the import must find the venv's copy (site-packages comes before the system's).
    imported, executable, version = _run([str(python), "-I", "-c", _PROBE], location).split()
    if Path(imported).parent != site_packages / PACKAGE:
        raise RoleError(
            f"the venv's interpreter imports {imported}, not the fresh build",
            code="role_build_failed",
            location=location,
        )
    files = installed_hashes(site_packages)
    if not files:
        raise RoleError(
            "no package file was installed", code="role_build_failed", location=location
        )
    return BuildReceipt(
        venv=location,
        python=executable,
        python_version=version,
        site_packages=str(site_packages),
        files=files,
        files_digest=_files_digest(files),
        seconds=round(time.monotonic() - started, 3),
    )
