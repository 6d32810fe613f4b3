"""The doit front door: the checks that must run before doit's own parser.

doit splits ``name=value`` variables out of the command line before it loads
``dodo.py``, indexing ``arg[0]`` of every argument, so an empty argument
(``doit units --suite ''``) raises ``IndexError`` inside doit. `CheckedDodoLoader` is a
doit loader plugin (configured in ``pyproject.toml`` under ``[tool.doit]``), which doit
builds before it splits the arguments; it refuses empty option values (also
``--suite=``) and an unusable ``$CONTINUITY_STORE`` or ``$CONTINUITY_OUT`` with one coded
line on stderr and exit status 2. ``dodo.py`` calls `front_door` too, for a doit run
from another directory (``-f``) where ``pyproject.toml`` is not read.

The checks run only when the process is doit's command line (``doit`` or
``python -m doit``): a program driving doit through its API has its own argv.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from doit.cmd_base import DodoTaskLoader

from continuity.errors import UsageError

__all__ = ["CheckedDodoLoader", "argv_problem", "environment_problem", "front_door"]

EXIT_USAGE = 2
_ENVIRONMENT = (("CONTINUITY_STORE", "store_path_invalid"), ("CONTINUITY_OUT", "out_path_invalid"))


def argv_problem(args: Sequence[str]) -> UsageError | None:
    """An ``option_empty`` error for the first empty (or blank) option value in `args`
    (doit's arguments, without the program name), else None."""
    for index, arg in enumerate(args):
        if not arg.strip():
            before = args[index - 1] if index else ""
            where = before.split("=", 1)[0] if before.startswith("-") else f"argument {index + 1}"
            return UsageError(
                f"{where} has an empty value; give a value or leave the option out",
                code="option_empty",
                location=where,
            )
        if arg.startswith("-") and "=" in arg and not arg.split("=", 1)[1].strip():
            where = arg.split("=", 1)[0]
            return UsageError(
                f"{where} has an empty value; give a value or leave the option out",
                code="option_empty",
                location=where,
            )
    return None


def environment_problem(environ: Mapping[str, str]) -> UsageError | None:
    """A ``store_path_invalid`` / ``out_path_invalid`` error when ``$CONTINUITY_STORE``
    or ``$CONTINUITY_OUT`` is set (not empty) but not a usable directory (see
    `continuity.outputs.usable_directory`; a missing store is created, a missing output
    directory only checked), else None."""
    from continuity.outputs import usable_directory

    for name, code in _ENVIRONMENT:
        value = environ.get(name, "")
        if not value:  # unset or empty: the default (./store, ./out), as everywhere
            continue
        if not value.strip():
            return UsageError(f"${name} is set but empty", code=code, location=f"${name}")
        try:
            # The store is created anyway (doit's dependency file lives there); an output
            # directory only when a command writes to it.
            usable_directory(value, code=code, create=code == "store_path_invalid")
        except UsageError as exc:
            return UsageError(f"${name}: {exc.message}", code=code, location=exc.location)
    return None


def _is_doit_command_line(argv: Sequence[str]) -> bool:
    if not argv:
        return False
    program = Path(argv[0])
    return program.name == "doit" or program.parts[-2:] == ("doit", "__main__.py")


def front_door(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> None:
    """Exit with status 2 and one coded line on stderr when doit's command line has an
    empty option value or the environment names an unusable store or output directory.
    Does nothing when the process is not doit's command line."""
    args = sys.argv if argv is None else argv
    if not _is_doit_command_line(args):
        return
    problem = argv_problem(args[1:]) or environment_problem(
        os.environ if environ is None else environ
    )
    if problem is not None:
        print(str(problem), file=sys.stderr, flush=True)
        raise SystemExit(EXIT_USAGE)


class CheckedDodoLoader(DodoTaskLoader):  # type: ignore[misc]
    """doit's ``dodo.py`` loader, after `front_door` (doit builds its loader before it
    parses anything)."""

    def __init__(self) -> None:
        front_door()
        super().__init__()
