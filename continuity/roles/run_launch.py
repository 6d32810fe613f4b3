"""One role launch of `doit compare_run`: the child command, its environment, its receipt.

A role runs in a child process with its checkout's registered build: the venv
interpreter, isolated (``-I``: no script or working directory on ``sys.path``, no
``PYTHONPATH``), running the exported committed tree's ``dodo.py``
(``<venv>/bin/python -I -B -m doit -f <build>/src/dodo.py units --lookup-role ROLE ...``)
with the role's own directory as its working directory, so nothing of the checkout's
work tree is imported: what runs is what `verify_build` hashes. It has its own ``--out``
and ``--store`` below ``<output>/roles/<role>/<suite>/`` so no checkpoint crosses
treatments. The child's environment is built, not inherited: only
``PATH`` and ``HOME`` pass through (no ``CI``, no credentials; the run is offline), and
``CONTINUITY_STORE`` / ``CONTINUITY_OUT`` name the isolated directories. The receipt it
leaves is verified against the role table, the registered checkout and the registration
digest; a launch without a verified receipt keeps its reason instead.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import msgspec
from msgspec import UNSET

from continuity.errors import RoleError, UsageError
from continuity.plan.request import PlanRequest
from continuity.roles.receipt import RECEIPT_FILE, read_role_receipt
from continuity.roles.register import Registration, Workload
from continuity.roles.register_build import BuildReceipt, build_hashes
from continuity.roles.table import Role

__all__ = [
    "LOG_FILE",
    "ReceiptCheck",
    "check_receipt",
    "child_command",
    "child_env",
    "launch_child",
    "role_flags",
    "role_plan_request",
    "verify_build",
]

LOG_FILE = "child.log"
_PASSED_THROUGH = ("PATH", "HOME")


class ReceiptCheck(msgspec.Struct, frozen=True, kw_only=True):
    """The receipt a launch left: its path below the output directory and sha256 when it
    verified, else None and the reason."""

    receipt: str | None
    receipt_sha256: str | None
    reason: str | None
    outcome: str | None


def verify_build(name: str, receipt: BuildReceipt) -> None:
    """Recompute the hashes of a registered build's exported tree and ``.pth`` file and
    compare.

    Raises:
        RoleError: ``role_build_changed`` (at the venv) when a file was added, removed
            or changed since registration, or the venv's interpreter is gone.
    """
    files, pth_sha256 = build_hashes(receipt)
    if (
        files != receipt.files
        or pth_sha256 != receipt.pth_sha256
        or not Path(receipt.python).is_file()
    ):
        changed = sorted(
            path
            for path in files.keys() | receipt.files.keys()
            if files.get(path) != receipt.files.get(path)
        ) or (["the .pth file"] if pth_sha256 != receipt.pth_sha256 else [])
        raise RoleError(
            f"{name}'s build changed since registration ({len(changed)} files differ"
            f"{', first ' + changed[0] if changed else ''}); register again",
            code="role_build_changed",
            location=receipt.venv,
        )


def role_plan_request(work: Workload, role: Role, suite: str) -> PlanRequest:
    """The plan a role child runs one suite of the registered workload with (in the
    default store: the child's own); `continuity.roles.aggregate_read` recomputes the
    role's plan digest from it."""
    request = PlanRequest(
        suite=suite,
        arms=role.arm,
        probe_mode="lookup-allowed-v1",
        repeats=work.repeats,
        lookup_reader=work.reader_binding,
        effort=work.effort,
        judge=work.judge or "",
        probe_limit=work.probe_limit or 0,
    )
    held = work.holdout
    if held is UNSET:
        return request
    return msgspec.structs.replace(  # an external registration: the frozen source, sized
        request,
        manifest=held.manifest,
        manifest_sha256=held.manifest_sha256,
        statistical_spec=held.statistical_spec,
        selection_seed=held.selection.seed,
        per_group=held.selection.per_group,
        policy=held.sizing,
        policy_sha256=held.sizing_sha256,
    )


# The plan options a role child is given, in the order its command line names them:
# always, when set (the judge), and an external registration's.
_ALWAYS = ("suite", "arms", "probe_mode", "repeats", "lookup_reader", "effort")
_HELD = (
    "manifest",
    "manifest_sha256",
    "statistical_spec",
    "selection_seed",
    "per_group",
    "policy",
    "policy_sha256",
)


def role_flags(work: Workload, role: Role, suite: str) -> list[str]:
    """The ``--name value`` flags a role child runs one suite of the registered workload
    with: its plan (`role_plan_request`) and the workload's traces."""
    request = role_plan_request(work, role, suite)
    names = [*_ALWAYS, *(("judge",) if request.judge else ())]
    values = [(name, str(getattr(request, name))) for name in names]
    if work.traces:
        values.append(("trace", ",".join(work.traces)))
    if work.holdout is not UNSET:
        values += [(name, str(getattr(request, name))) for name in _HELD]
    if work.probe_limit is not None:
        values.append(("probe_limit", str(work.probe_limit)))
    return [item for name, value in values for item in (f"--{name.replace('_', '-')}", value)]


def child_command(
    registration: Registration, role: Role, suite: str, digest: str, role_dir: Path
) -> list[str]:
    """The role child's command line for one suite of the registered workload."""
    build = registration.builds["r0" if role.code == "R0" else "rpack"]
    flags = role_flags(registration.workload, role, suite)
    return [
        str(Path(build.venv) / "bin" / "python"),
        # -I ignores PYTHON* variables too, so -B keeps bytecode out of the hashed export.
        *("-I", "-B", "-m", "doit", "-f", str(Path(build.src) / "dodo.py"), "units"),
        *("--lookup-role", role.name, "--registration-digest", digest, *flags),
        *("--run", role.name, "--out", str(role_dir / "out"), "--store", str(role_dir / "store")),
    ]


def child_env(role_dir: Path) -> dict[str, str]:
    """The child's environment: PATH and HOME, the isolated store and out, no bytecode
    written (the checkouts stay as registered)."""
    env = {name: os.environ[name] for name in _PASSED_THROUGH if name in os.environ}
    return {
        **env,
        "CONTINUITY_STORE": str(role_dir / "store"),
        "CONTINUITY_OUT": str(role_dir / "out"),
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def launch_child(command: list[str], env: dict[str, str], role_dir: Path, cwd: str) -> int:
    """Run the child to its end, its stdout and stderr in ``child.log``; its exit status
    (negative: the signal that ended it)."""
    with (role_dir / LOG_FILE).open("wb") as log:
        return subprocess.run(
            command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, check=False
        ).returncode


def _mismatch(receipt_role: tuple[str, str, str], role: Role) -> str | None:
    expected = (role.name, role.arm, role.code)
    if receipt_role != expected:
        return f"the receipt is for {receipt_role}, not {expected}"
    return None


def check_receipt(
    output: Path, role_dir: Path, role: Role, registration: Registration, digest: str
) -> ReceiptCheck:
    """Verify the receipt the role child left (schema and frozen soul, role, arm, code,
    the registered checkout's revision, the witness of its code, the registration digest).

    A missing or unverified receipt is not an error here: the launch records it with
    ``role_receipt_missing`` or ``role_receipt_invalid`` and its message.
    """
    path = role_dir / "out" / "runs" / role.name / RECEIPT_FILE
    if not path.is_file():
        return ReceiptCheck(
            receipt=None,
            receipt_sha256=None,
            reason=f"role_receipt_missing: the child left no {RECEIPT_FILE}",
            outcome=None,
        )
    try:
        receipt = read_role_receipt(path)
    except UsageError as exc:
        return ReceiptCheck(
            receipt=None, receipt_sha256=None, reason=f"{exc.code}: {exc.message}", outcome=None
        )
    checkout = registration.r0 if role.code == "R0" else registration.rpack
    problem = _mismatch((receipt.role, receipt.arm, receipt.code), role)
    if problem is None and receipt.registration_digest != digest:
        problem = "the receipt binds another registration digest"
    if problem is None and (receipt.revision, receipt.dirty) != (checkout.revision, False):
        problem = f"the receipt's commit {receipt.revision[:12]} is not the registered one"
    if problem is None and receipt.witness != (role.code == "Rpack"):
        problem = f"the receipt's witness ({receipt.witness}) is not {role.code}'s"
    if problem is not None:
        return ReceiptCheck(
            receipt=None,
            receipt_sha256=None,
            reason=f"role_receipt_invalid: {problem}",
            outcome=receipt.outcome,
        )
    return ReceiptCheck(
        receipt=path.relative_to(output).as_posix(),
        receipt_sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
        reason=None,
        outcome=receipt.outcome,
    )
