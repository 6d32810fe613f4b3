"""The outside agent's sandbox: bubblewrap around every adapter process tree.

An adapter runs as the same user as continuity, so without a sandbox it can read the
checkout's fixtures, the output directory's traces (the answer key), the store, the
parent's environment and credentials through ``/proc``, reach any loopback port, and
leave daemons behind. `sandbox_argv` wraps the adapter's command in ``bwrap`` (Debian
``bubblewrap``) so that:

- **it sees only** a fresh root: ``/usr`` (and its usrmerge links), a few files of
  ``/etc`` (certificates, time zone), the interpreter's prefix, its own folder
  (read-only, at its own path), continuity's dependency-light CAP/0 SDK at
  ``/cap/sdk`` (``PYTHONPATH``), a private scratch workspace at ``/workspace`` (the only
  persistent writable place: it survives a restart), a private ``/tmp`` and a ``/proc``
  of its own PID namespace. The checkout, the store, the output directory and the
  credentials are never bound; when one lies inside a bound interpreter prefix it is
  masked (an empty tmpfs, or ``/dev/null`` for a file), and when one lies inside the
  agent's own folder the spawn is refused (``sandbox_path_refused``). The environment is
  the manifest's allowlist only (``HOME`` is ``/tmp``);
- **it reaches the network only through** the model proxy and the MCP server it was
  given: the sandbox has a network namespace of its own, and its first process
  (`continuity.agents.cap_forward`) listens on the same loopback ports as the two
  servers and forwards to the Unix sockets they also serve on (``/cap/sock``). Every
  other address is unreachable;
- **every descendant dies with the unit**: a PID namespace whose init dies with bwrap
  (``--die-with-parent``), which continuity kills; a ``setsid`` double fork stays in
  the namespace and dies with it. No user namespace may be made inside
  (``--disable-userns``), and every capability is dropped.

Where bubblewrap is missing or the kernel refuses user namespaces, a run needs an
explicit ``--no-sandbox`` (`require_sandbox` raises ``sandbox_unavailable`` otherwise);
the banner and each unit's evidence then say "not sandboxed". There is no silent
fallback.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import msgspec

import continuity
from continuity.errors import AdapterError

__all__ = [
    "SANDBOX_VERSION",
    "SDK_FILES",
    "WORKSPACE",
    "Confinement",
    "Forward",
    "protected_paths",
    "require_sandbox",
    "sandbox_argv",
    "sandbox_problem",
]

# Bound into an outside agent's unit keys: a change to what the sandbox exposes is a
# different measurement.
SANDBOX_VERSION = "bwrap-cap-sandbox-v1"
# continuity's CAP/0 SDK, all an adapter written in Python imports from continuity
SDK_FILES = (
    "__init__.py",
    "agents/__init__.py",
    "agents/protocol.py",
    "agents/sdk.py",
    "errors/__init__.py",
    "errors/hints.py",
    "errors/types.py",
    "nesting.py",
)
_SOCKETS = "/cap/sock"
WORKSPACE = "/workspace"
# Read-only system files an adapter may read: TLS roots, the time zone, name service
# order, and the dynamic linker's cache (without it ``ctypes.util.find_library``, which
# trio runs on import, falls back to running gcc and ld: about 0.25 s per adapter).
_ETC = (
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/localtime",
    "/etc/nsswitch.conf",
    "/etc/ld.so.cache",
)
_PACKAGE = Path(continuity.__file__).resolve().parent
Forward = tuple[int, str]  # a loopback port inside -> the name of its Unix socket


def _bwrap() -> str | None:
    return shutil.which(os.environ.get("CONTINUITY_BWRAP", "bwrap"))


@functools.cache
def sandbox_problem() -> str | None:
    """Why no sandbox can be made here (None when bwrap works): bubblewrap missing, or a
    trial sandbox refused (user namespaces disabled). Asked once per process."""
    bwrap = _bwrap()
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed (Debian: apt-get install bubblewrap)"
    trial = [bwrap, *_ISOLATION, *_base_mounts(), "--", "/usr/bin/true"]
    try:
        done = subprocess.run(trial, capture_output=True, timeout=30, env={}, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap could not be run: {exc}"
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        return f"bwrap cannot make a sandbox here: {said[-1] if said else done.returncode}"
    return None


def require_sandbox(where: str) -> None:
    """Refuse a sandboxed run that cannot have its sandbox.

    Raises:
        AdapterError: ``sandbox_unavailable`` naming why, and ``--no-sandbox``.
    """
    problem = sandbox_problem()
    if problem is not None:
        raise AdapterError(
            f"{problem}; outside agents run sandboxed, or unsandboxed only with an "
            "explicit --no-sandbox (the report then says so)",
            code="sandbox_unavailable",
            location=where,
        )


_ISOLATION = (  # an argv table: a flag (and its value) a line
    "--unshare-all", "--unshare-user", "--disable-userns",
    "--cap-drop", "ALL",
    "--die-with-parent", "--new-session",
    "--hostname", "cap-sandbox",
)  # fmt: skip


def _base_mounts() -> list[str]:
    mounts = ["--tmpfs", "/", "--ro-bind", "/usr", "/usr"]
    for link in ("bin", "lib", "lib64", "sbin"):
        target = Path("/", link)
        if target.is_symlink():
            mounts += ["--symlink", os.readlink(target), str(target)]
        elif target.is_dir():
            mounts += ["--ro-bind", str(target), str(target)]
    return [*mounts, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]


def protected_paths(extra: Sequence[Path] = ()) -> list[Path]:
    """What an adapter must never see: the checkout continuity runs from (its fixtures
    hold expectations), the installed package, the store, the output directory (its
    traces are the answer key) and `extra` (the credentials file, the unit's work)."""
    found = [_PACKAGE, *extra]
    if (_PACKAGE.parent / "pyproject.toml").exists():
        found.append(_PACKAGE.parent)
    named = (os.environ.get(name) for name in ("CONTINUITY_STORE", "CONTINUITY_OUT"))
    found += [Path(value) for value in named if value]
    return [Path(os.path.abspath(path)) for path in found]


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _interpreter_roots(folder: Path, command: Sequence[str]) -> list[Path]:
    """The interpreter prefixes the command needs: continuity's own, and the base
    interpreter of a virtualenv the command runs (its ``pyvenv.cfg`` ``home``)."""
    roots = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve()}
    program = Path(command[0]) if command else Path()
    if not program.is_absolute():
        program = folder / program
    config = program.parent.parent / "pyvenv.cfg"
    if config.is_file():
        for line in config.read_text(encoding="utf-8", errors="replace").splitlines()[:50]:
            key, _, value = line.partition("=")
            if key.strip() == "home" and value.strip():
                roots.add(Path(value.strip()).resolve().parent)
    return sorted(root for root in roots if not _inside(root, Path("/usr")))


def _masks(roots: Sequence[Path], folder: Path, protected: Sequence[Path]) -> list[str]:
    """Refuse a protected path inside the agent's folder; mask one inside a bound
    interpreter prefix (an empty tmpfs over a directory, /dev/null over a file)."""
    masks: list[str] = []
    for path in protected:
        if _inside(path, folder):
            raise AdapterError(
                f"the agent's folder {folder} holds {path}, which an outside agent must "
                "not see; move the agent out of it",
                code="sandbox_path_refused",
                location=str(folder),
            )
        if any(_inside(path, root) for root in roots) and path.exists():
            masks += (
                ["--tmpfs", str(path)] if path.is_dir() else ["--ro-bind", "/dev/null", str(path)]
            )
    return masks


class Confinement(msgspec.Struct, frozen=True, kw_only=True):
    """Where a sandboxed adapter's ways out lead: `sockets` (a short host directory:
    Unix socket paths hold at most 107 bytes) appears at ``/cap/sock``; each of
    `forwards` maps a loopback port inside to a socket there; `protected` adds paths the
    adapter must not see (the credentials file, the unit's work)."""

    sockets: Path
    forwards: tuple[Forward, ...]
    protected: tuple[Path, ...] = ()


def sandbox_argv(
    command: Sequence[str],
    *,
    folder: Path,
    workspace: Path,
    confinement: Confinement,
    env: dict[str, str],
) -> list[str]:
    """The ``bwrap`` command line that runs `command` (cwd `folder`) sandboxed (module
    doc): `workspace` appears at ``/workspace``, and `confinement` says where its
    loopback ports lead.

    Raises:
        AdapterError: ``sandbox_unavailable`` (no bwrap), ``sandbox_path_refused`` (a
            protected path inside the agent's folder).
    """
    bwrap = _bwrap()
    if bwrap is None:
        raise AdapterError("bubblewrap (bwrap) is not installed", code="sandbox_unavailable")
    folder = folder.resolve()
    roots = _interpreter_roots(folder, command)
    argv = [bwrap, *_ISOLATION, *_base_mounts()]
    for path in _ETC:
        argv += ["--ro-bind-try", path, path]
    for root in roots:
        argv += ["--ro-bind", str(root), str(root)]
    # The folder after the masks: installed from a wheel, it lies inside the masked tree.
    argv += _masks(roots, folder, protected_paths(confinement.protected))
    argv += ["--ro-bind", str(folder), str(folder)]
    for name in SDK_FILES:
        argv += ["--ro-bind", str(_PACKAGE / name), f"/cap/sdk/continuity/{name}"]
    argv += ["--ro-bind", str(_PACKAGE / "agents" / "cap_forward.py"), "/cap/forward.py"]
    argv += ["--bind", str(workspace), WORKSPACE, "--ro-bind", str(confinement.sockets), _SOCKETS]
    argv += ["--remount-ro", "/", "--clearenv"]
    for name, value in {**env, "HOME": "/tmp", "PYTHONPATH": "/cap/sdk"}.items():
        argv += ["--setenv", name, value]
    argv += ["--chdir", str(folder), "--"]
    pairs = [f"{port}={_SOCKETS}/{name}" for port, name in confinement.forwards]
    return [*argv, sys.executable, "-I", "-S", "/cap/forward.py", *pairs, "--", *command]
