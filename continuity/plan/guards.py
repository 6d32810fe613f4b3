"""The guards a real (paid) run must pass, in order, before any credential is read.

1. ``real_refused_ci``: a ``CI`` variable exists in the environment, even empty.
2. ``real_provider_required``: the plan names no real endpoint (``--provider``).
3. ``credentials_required``: no ``--credentials`` file was given for an endpoint that is
   not on this machine (a loopback server needs no key: none is sent).
4. ``confirmation_required``: no ``--confirm-plan DIGEST`` was given.
5. ``confirmation_mismatch``: the digest is not this plan's (some bound field differs).
6. ``confirmation_unknown``: no dry run of this plan is recorded in the store.
7. ``credentials_missing``: the credentials path given is not a regular file (``stat``
   only).
8. ``output_required`` / ``output_inside_checkout``: the output directory is missing or,
   with symlinks resolved, inside the checkout.
9. ``checkout_unknown`` / ``checkout_dirty`` / ``checkout_flags_refused``: the checkout
   is not a git work tree, has changes in its code (untracked files count), or hides
   changes to its code with assume-unchanged or skip-worktree flags. Its code is what
   `continuity.installation.CODE_PATHS` names (the package, ``rules/``, ``dodo.py``, the
   fixtures, the toy agent, ``pyproject.toml``); a note elsewhere in the checkout is no
   code and is never refused. Code a wheel installed (no checkout) passes instead when
   every one of its files still matches the distribution's RECORD hash and no file was
   added under its code (``installed_code_modified`` otherwise); the run binds the
   distribution's version and files in place of a commit
   (`continuity.runner.manifest.code_revision`).

Nothing here opens the credentials file; the provider reads it lazily, in the probe
process, after every guard has passed.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from continuity.errors import RealModeError
from continuity.installation import CODE_PATHS, installed_code, tree_root
from continuity.plan.estimate import DryRun, confirmed_dry_run
from continuity.plan.plan import Plan, plan_digest
from continuity.providers.endpoint import is_loopback
from continuity.store import Store

__all__ = ["check_checkout", "check_real_mode", "default_checkout", "refuse_under_ci"]


def refuse_under_ci(environ: Mapping[str, str] | None = None, *, what: str = "real mode") -> None:
    """Guard 1, the one place it is written: nothing real runs where a ``CI`` variable
    exists (even an empty one). The commands call it first, before any option is read;
    `check_real_mode` calls it again for callers that skip the command.

    Raises:
        RealModeError: ``real_refused_ci``.
    """
    if "CI" in (os.environ if environ is None else environ):
        raise RealModeError(
            f"{what} never runs where a CI variable exists (even an empty one)",
            code="real_refused_ci",
            location="$CI",
        )


def default_checkout() -> Path:
    """The checkout this code runs from (the directory holding ``dodo.py``), or the tree
    a wheel installed (`continuity.installation.tree_root`)."""
    return tree_root()


def _git(checkout: Path, *args: str) -> str:
    try:
        result = subprocess.run(
            ["git", "-C", str(checkout), *args], capture_output=True, text=True, check=False
        )
    except OSError as exc:
        raise RealModeError(
            f"git is not available: {exc.strerror}",
            code="checkout_unknown",
            location=str(checkout),
        ) from None
    if result.returncode != 0:
        raise RealModeError(
            f"not a git checkout: {result.stderr.strip().splitlines()[-1:]}",
            code="checkout_unknown",
            location=str(checkout),
        )
    return result.stdout


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def check_checkout(checkout: Path) -> None:
    """Guard 9: the code this run binds is exactly what a commit holds (a git checkout
    with no changes, untracked files or hiding flags under `CODE_PATHS`) or what an
    installed distribution shipped (every file matching its RECORD hash).

    Raises:
        RealModeError: ``installed_code_modified``, ``checkout_unknown``,
            ``checkout_dirty`` or ``checkout_flags_refused``.
    """
    installed = installed_code(checkout)
    if installed is not None:
        if installed.modified:
            raise RealModeError(
                f"{len(installed.modified)} installed files of continuity "
                f"{installed.version} differ from the distribution's RECORD (changed, "
                f"missing or not listed; first: {installed.modified[0]!r}); remove added "
                "files and reinstall the wheel",
                code="installed_code_modified",
                location=str(checkout / installed.modified[0]),
            )
        return
    top = Path(_git(checkout, "rev-parse", "--show-toplevel").strip()).resolve()
    # Pathspecs relative to `checkout` (git -C): its code, wherever the work tree's top is.
    status = _git(checkout, "status", "--porcelain=v1", "--untracked-files=all", "--", *CODE_PATHS)
    changed = [line[3:] for line in status.splitlines() if line.strip()]  # "XY path"
    if changed:
        raise RealModeError(
            f"the checkout's code has {len(changed)} uncommitted or untracked paths "
            f"(first: {changed[0]!r}); commit or remove them (only "
            f"{', '.join(CODE_PATHS)} are code)",
            code="checkout_dirty",
            location=str(top),
        )
    # `git ls-files -v`: a lowercase tag marks assume-unchanged, S skip-worktree.
    flagged = [
        line[2:]
        for line in _git(checkout, "ls-files", "-v", "--", *CODE_PATHS).splitlines()
        if line and (line[0].islower() or line[0] == "S")
    ]
    if flagged:
        raise RealModeError(
            f"{len(flagged)} paths are marked assume-unchanged or skip-worktree "
            f"(first: {flagged[0]!r}); clear the flags so the checkout's state is visible",
            code="checkout_flags_refused",
            location=str(top),
        )


def check_real_mode(
    plan: Plan,
    *,
    confirm: str | None,
    credentials: str | None,
    output: str | None,
    store: Store,
    checkout: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[Path, DryRun]:
    """Run every guard in order; return the resolved output directory and the
    confirmed dry run. See the module doc for the codes.

    Raises:
        RealModeError: the first guard that fails, with its code.
    """
    credentials = _check_endpoint(plan, credentials, os.environ if environ is None else environ)
    dry = _check_confirmation(plan, confirm, store)
    if credentials and not os.path.isfile(credentials):  # a stat, never an open
        raise RealModeError(
            "the credentials file does not exist or is not a regular file",
            code="credentials_missing",
            location=credentials,
        )
    resolved, root = _check_output(output, checkout)
    check_checkout(root)
    return resolved, dry


def _check_endpoint(plan: Plan, credentials: str | None, env: Mapping[str, str]) -> str:
    """Guards 1 to 3: no CI, a real endpoint, a credentials path unless the endpoint is
    on this machine (returned; "" for none)."""
    refuse_under_ci(env)
    if plan.mode != "real":
        raise RealModeError(
            "real mode needs a real endpoint: --provider openai-chat, openai-responses or "
            "anthropic",
            code="real_provider_required",
            location="--provider",
        )
    if not credentials and not is_loopback(plan.endpoint.base_url):
        raise RealModeError(
            f"{plan.endpoint.base_url} is not on this machine: real mode needs an explicit "
            '--credentials FILE holding {"api_key": "..."}',
            code="credentials_required",
            location="--credentials",
        )
    return credentials or ""


def _check_confirmation(plan: Plan, confirm: str | None, store: Store) -> DryRun:
    """Guards 4 to 6: `confirm` is this plan's digest and its dry run is recorded."""
    digest = plan_digest(plan)
    if not confirm:
        raise RealModeError(
            f"real mode needs --confirm-plan with the digest of an identical dry run "
            f"(run doit dry_run with the same options; this plan is {digest[:16]}...)",
            code="confirmation_required",
            location="--confirm-plan",
        )
    if confirm != digest:
        raise RealModeError(
            f"--confirm-plan {confirm[:16]}... is not this plan's digest {digest[:16]}...: a "
            "bound option (suite, seeds, models, efforts, repeats, arms, probe limit, "
            "endpoint, context window, output cap or price source) differs from the dry run",
            code="confirmation_mismatch",
            location="--confirm-plan",
        )
    dry = confirmed_dry_run(store, digest)
    if dry is None:
        raise RealModeError(
            f"no dry run of plan {digest[:16]}... is recorded in {store.root}; run doit "
            "dry_run first (a dry run refused by --cost-limit is not recorded)",
            code="confirmation_unknown",
            location="--confirm-plan",
        )
    return dry


def _check_output(output: str | None, checkout: Path | None) -> tuple[Path, Path]:
    """Guard 8: an output directory given, outside the checkout. Returns both resolved."""
    if not output:
        raise RealModeError(
            "real mode needs an explicit --out directory outside the checkout",
            code="output_required",
            location="--out",
        )
    root = (checkout or default_checkout()).resolve()
    resolved = Path(output).expanduser().resolve()
    if _inside(resolved, root):
        raise RealModeError(
            f"the output directory resolves to {resolved}, inside the checkout {root}",
            code="output_inside_checkout",
            location=output,
        )
    return resolved, root
