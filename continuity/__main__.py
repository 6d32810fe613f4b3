"""``python -m continuity`` (and the ``continuity`` console script): doit, with its checks
first, from any directory.

``continuity <doit arguments>`` behaves like ``doit <doit arguments>`` run in the checkout
(``list``, ``help units``, ``units --suite original`` ...), with the same output and exit
status, except that a bad command line is refused with one coded line on stderr and exit
status 2 wherever it is run from: an empty option value (``option_empty``) and an
unusable ``$CONTINUITY_STORE`` / ``$CONTINUITY_OUT`` before doit splits its arguments,
then doit's own usage errors (``option_unknown``, ``option_value_unexpected``,
``option_value_missing``, ``task_unknown``) once the tasks are loaded
(`continuity.argv.CheckedDodoLoader`).

Run plainly from another directory, ``doit -f path/dodo.py`` never reads the checkout's
``pyproject.toml``, so doit splits its arguments (and crashes on an empty one) before
``dodo.py`` is imported; this entry point never depends on the working directory.

The tasks come from the ``dodo.py`` beside the package (the checkout this package was
installed from, or the tree a wheel installs: `continuity.installation`), or, for a
package installed without either, from ``./dodo.py`` (doit's default); ``-f FILE`` /
``--file``, ``-k`` and ``$DOIT_FILE`` are honoured. doit's configuration is read from the
checkout's ``pyproject.toml``, never from the working directory's. doit runs its tasks in
the checkout; from an installed tree, in the working directory (so ``./store`` and
``./out`` are the caller's, never the environment's ``site-packages``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from continuity.argv import (
    COMMANDS,
    EXIT_USAGE,
    CheckedDodoLoader,
    argv_problem,
    environment_problem,
)
from continuity.installation import is_installed_tree

__all__ = ["dodo_file", "main"]

_CHECKOUT = Path(__file__).resolve().parent.parent
_LOADER_FILE_OPTIONS = ("-f", "--file", "-k", "--seek-file")


def dodo_file() -> Path | None:
    """The checkout's ``dodo.py`` (beside this package and its ``rules/``), or None when
    the package was installed without its checkout."""
    dodo = _CHECKOUT / "dodo.py"
    return dodo if dodo.is_file() and (_CHECKOUT / "rules").is_dir() else None


def _names_its_dodo_file(args: Sequence[str]) -> bool:
    """Whether the command line (or ``$DOIT_FILE``) chooses the dodo file itself."""
    if os.environ.get("DOIT_FILE"):
        return True
    for arg in args:
        if arg == "--":
            break
        if arg.split("=", 1)[0] in _LOADER_FILE_OPTIONS or (
            arg.startswith(("-f", "-k")) and not arg.startswith("--")
        ):
            return True
    return False


def _program() -> str:
    return "continuity" if Path(sys.argv[0]).name == "continuity" else "python -m continuity"


def main(argv: Sequence[str] | None = None) -> int:
    """Run doit's command line `argv` (default: ``sys.argv[1:]``) on the checkout's tasks.

    Returns:
        doit's exit status, or 2 (`EXIT_USAGE`) after one coded line on stderr for a
        command line refused before doit runs or once the tasks are loaded.
    """
    from doit.doit_cmd import DoitMain

    args = list(sys.argv[1:] if argv is None else argv)
    problem = argv_problem(args) or environment_problem(os.environ)
    if problem is not None:
        print(str(problem), file=sys.stderr, flush=True)
        return EXIT_USAGE
    dodo = dodo_file()
    doits_own = bool(args) and args[0] in ("--version", "--help")  # before any loader option
    if dodo is not None and not doits_own and not _names_its_dodo_file(args):
        here = ["-d", os.getcwd()] if is_installed_tree(_CHECKOUT) else []
        args = ["-f", str(dodo), *here, *args]
    config = _CHECKOUT / "pyproject.toml"
    doit = DoitMain(
        CheckedDodoLoader(command_line=True),
        config_filenames=(str(config),) if dodo is not None and config.is_file() else (),
        # doit reads [tool.doit] only from a file named pyproject.toml in the working
        # directory: the grouped `help` (a command plugin) is given here as well.
        extra_config={"COMMAND": COMMANDS},
    )
    doit.BIN_NAME = _program()
    try:
        status: int = doit.run(args)
    except SystemExit as exc:  # a refusal once the tasks are loaded (CheckedDodoLoader)
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr, flush=True)
        return 1
    return status


if __name__ == "__main__":
    sys.exit(main())
