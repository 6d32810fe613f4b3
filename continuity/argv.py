"""The doit front door: the checks that must run before doit's own parser.

doit splits ``name=value`` variables out of the command line before it loads
``dodo.py``, indexing ``arg[0]`` of every argument, so an empty argument
(``doit units --suite ''``) raises ``IndexError`` inside doit. `CheckedDodoLoader` is a
doit loader plugin (configured in ``pyproject.toml`` under ``[tool.doit]``), which doit
builds before it splits the arguments; it refuses empty option values (also
``--suite=``) and an unusable ``$CONTINUITY_STORE`` or ``$CONTINUITY_OUT`` with one coded
line on stderr and exit status 2. ``dodo.py`` calls `front_door` too, for a doit run
from another directory (``-f``) where ``pyproject.toml`` is not read.

Once the tasks are loaded, `CheckedDodoLoader.load_tasks` checks the task selection of
doit's ``run`` command (``doit units --suite original``) the way doit will parse it, and
turns what doit would refuse with an uncoded ``ERROR:`` line and exit 3 into one coded
line and exit 2: ``option_unknown`` (an option the task does not take, or an ambiguous
prefix; the line lists the task's options), ``option_value_unexpected`` (a value given to
a flag, ``--repair=yes``), ``option_value_missing`` (``--suite`` at the end) and
``task_unknown`` (a name that is no task, subtask, target or pattern). doit's other
commands (``list``, ``help``, ``info``, ``forget``, ``clean`` ...) keep their own parsing,
except that ``doit help NAME`` refuses a name that is no task or command the same way
(``task_unknown``, exit 2; `GroupedHelp`).

``doit list`` without options shows the tasks in the groups ``dodo.py``'s ``TASK_GROUPS``
names, everyday work first (`CheckedDodoLoader`; with an option or a task name, or a
``dodo.py`` without ``TASK_GROUPS``, doit's flat list), and ``doit help`` without a task
starts with the same list (`GroupedHelp`, a doit command plugin: `COMMANDS`, named in
``pyproject.toml``).

The checks run only when the process is doit's command line (``doit`` or
``python -m doit``): a program driving doit through its API has its own argv. From
another directory (``doit -f path/dodo.py``) doit never reads ``pyproject.toml``, so the
loader is doit's default and the argument split runs before ``dodo.py`` (and its
`front_door` call) is imported: ``python -m continuity`` (`continuity.__main__`) runs
every check here first, from any directory.
"""

from __future__ import annotations

import getopt
import inspect
import os
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from doit.cmd_base import DodoTaskLoader
from doit.cmd_help import Help
from doit.cmdparse import CmdOption, TaskParse
from doit.exceptions import InvalidDodoFile

from continuity.errors import UsageError
from continuity.errors.hints import did_you_mean

__all__ = [
    "COMMANDS",
    "EXIT_USAGE",
    "CheckedDodoLoader",
    "GroupedHelp",
    "argv_problem",
    "environment_problem",
    "front_door",
    "grouped_listing",
    "help_asked",
    "selection_problem",
    "task_help",
]

EXIT_USAGE = 2
# doit command plugins (doit's ``[tool.doit.plugins.command]``, or DoitMain's extra_config
# section ``COMMAND``): name -> "module:class".
COMMANDS = {"help": "continuity.argv:GroupedHelp"}
# doit list's options, by their names in its parsed options: any given keeps doit's list.
_LIST_OPTIONS = ("subtasks", "quiet", "status", "private", "list_deps", "template")
# An empty value of these options has a code of its own (an empty
# --fixed-budget-sha256 is refused before any workload or source validation).
_EMPTY_CODES = {"--fixed-budget-sha256": "lookup_empty_fixed_budget_sha256"}
_ENVIRONMENT = (("CONTINUITY_STORE", "store_path_invalid"), ("CONTINUITY_OUT", "out_path_invalid"))


def argv_problem(args: Sequence[str]) -> UsageError | None:
    """An ``option_empty`` error (or the option's own code, `_EMPTY_CODES`) for the
    first empty (or blank) option value in `args` (doit's arguments, without the
    program name), else None."""
    for index, arg in enumerate(args):
        if not arg.strip():
            before = args[index - 1] if index else ""
            where = before.split("=", 1)[0] if before.startswith("-") else f"argument {index + 1}"
            return UsageError(
                f"{where} has an empty value; give a value or leave the option out",
                code=_EMPTY_CODES.get(where, "option_empty"),
                location=where,
            )
        if arg.startswith("-") and "=" in arg and not arg.split("=", 1)[1].strip():
            where = arg.split("=", 1)[0]
            return UsageError(
                f"{where} has an empty value; give a value or leave the option out",
                code=_EMPTY_CODES.get(where, "option_empty"),
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


_GETOPT_CODES = (
    ("not recognized", "option_unknown"),
    ("not a unique prefix", "option_unknown"),
    ("must not have an argument", "option_value_unexpected"),
    ("requires argument", "option_value_missing"),
)


def _option_problem(
    task: str, params: Sequence[Mapping[str, Any]], args: list[str]
) -> tuple[UsageError | None, list[str]]:
    """Parse one task's options as doit will (its own `TaskParse`, through getopt, which
    stops at the first non-option); the error, or the arguments left for the next task."""
    parser = TaskParse([CmdOption(dict(param)) for param in params])
    try:
        opts, rest = getopt.getopt(args, parser.get_short(), parser.get_long())
    except getopt.GetoptError as exc:
        dashes = "--" if exc.msg.startswith("option --") else "-"
        option = f"{dashes}{exc.opt}"
        code = next((c for text, c in _GETOPT_CODES if text in exc.msg), "option_unknown")
        takes = ", ".join(f"-{o.short}" if not o.long else f"--{o.long}" for o in parser.options)
        reason = {
            "option_unknown": f"{task} has no option {option}",
            "option_value_unexpected": f"{option} of {task} is a flag and takes no value",
            "option_value_missing": f"{option} of {task} needs a value",
        }[code]
        if code == "option_unknown" and "unique prefix" in exc.msg:
            reason = f"{task}: {option} is the start of more than one option"
        options = f"its options: {takes}" if takes else "it takes no options"
        return UsageError(f"{reason}; {options}", code=code, location=option), []
    return _abbreviation_problem(task, parser, args[: len(args) - len(rest)]) or _value_problem(
        parser, opts
    ), rest


def _abbreviation_problem(task: str, parser: TaskParse, args: list[str]) -> UsageError | None:
    """getopt takes a unique prefix of a long option for the option (``--out`` for
    ``--output``): a user who typed another task's option would silently set this one.
    Every long option must be spelled out."""
    longs = {name.rstrip("="): name.endswith("=") for name in parser.get_long()}
    tokens = iter(args)
    for token in tokens:
        if not token.startswith("--") or token == "--":
            continue
        name = token[2:].split("=", 1)[0]
        if name in longs:
            if longs[name] and "=" not in token:
                next(tokens, None)  # its value, which may itself start with dashes
            continue
        full = next(n for n in longs if n.startswith(name))
        return UsageError(
            f"{task} has no option --{name} (options are never abbreviated); "
            f"did you mean --{full}?",
            code="option_unknown",
            location=f"--{name}",
        )
    return None


_CODED = re.compile(
    r"(?P<code>[a-z][a-z0-9_]*): (?P<message>.*) \(at (?P<location>[^()]*)\)\Z", re.S
)


def _value_problem(parser: TaskParse, opts: list[tuple[str, str]]) -> UsageError | None:
    """The first value a typed option refuses (the checking types of `rules.params`
    raise ``ValueError`` with a coded line), converted as doit will convert it."""
    for flag, value in opts:
        name = flag.lstrip("-")
        option = next((o for o in parser.options if name in (o.long, o.short)), None)
        if option is None or option.type is bool or not callable(option.type):
            continue
        try:
            option.type(value)
        except ValueError as exc:
            match = _CODED.match(str(exc))
            if match is None:  # doit's own conversions (int, float) say what is wrong
                return UsageError(
                    f"{value[:40]!r} is not a valid value: {exc}",
                    code="option_invalid",
                    location=flag,
                )
            return UsageError(match["message"], code=match["code"], location=match["location"])
    return None


def selection_problem(
    args: Sequence[str],
    params: Mapping[str, Sequence[Mapping[str, Any]]],
    targets: Sequence[str] = (),
) -> UsageError | None:
    """The first problem doit's ``run`` command would refuse uncoded in `args` (its task
    selection: ``[task [--option [value]] ...] ...``), else None.

    `params` maps every task name (subtasks included) to its option dicts; `targets`
    are the file targets doit also accepts by name. Patterns (``*``) are left to doit.
    """
    rest = list(args)
    while rest:
        name = rest.pop(0)
        if "*" in name:
            continue
        if name in params:
            problem, rest = _option_problem(name, params[name], rest)
            if problem is not None:
                return problem
            continue
        if name in targets or os.path.abspath(name) in targets:
            continue
        return _unknown_task(
            name, [n for n in params if ":" not in n], what="task, command or target"
        )
    return None


def _unknown_task(
    name: str, tasks: Sequence[str], *, what: str, others: Sequence[str] = ()
) -> UsageError:
    """The ``task_unknown`` refusal of `name`: what it is not (`what`), the nearest of
    `tasks` and `others` (doit's commands, for ``doit help``) as a hint, and the tasks."""
    public = sorted(tasks)
    return UsageError(
        f"{name!r} is no {what}; {did_you_mean(name, [*public, *others])}tasks: "
        f"{', '.join(public)} (doit list describes them)",
        code="task_unknown",
        location=name,
    )


_HELP = ("--help", "-h")


def help_asked(args: Sequence[str], names: Sequence[str]) -> str | None:
    """The task whose options include ``--help`` (or ``-h``) in a ``run`` selection: the
    nearest task name before it; None when no help was asked."""
    task = None
    for arg in args:
        if arg in names:
            task = arg
        elif arg in _HELP and task is not None:
            return task
    return None


def task_help(name: str, doc: str | None, params: Sequence[Mapping[str, Any]]) -> str:
    """A task's help: what it does, then each option with its text and its default."""
    lines = [f"doit {name} [options]", "", (doc or "").strip() or "(no description)", ""]
    if not params:
        lines.append("It takes no options.")
    for option in params:
        flag = f"--{option.get('long') or option['name']}"
        is_flag = option.get("type") is bool
        text = str(option.get("help") or "").replace("%%", "%")  # doit's %-escape
        default = option.get("default")
        if not is_flag and default not in ("", None) and "default" not in text:
            text += f" (default: {default})"
        lines.append(f"  {flag if is_flag else flag + '=VALUE':<28} {text}")
    return "\n".join(lines)


class CheckedDodoLoader(DodoTaskLoader):  # type: ignore[misc]
    """doit's ``dodo.py`` loader, after `front_door` (doit builds its loader before it
    parses anything); for the ``run`` command it also checks the task selection
    (`selection_problem`) once the tasks are known."""

    def __init__(self, *, command_line: bool | None = None) -> None:
        """`command_line`: check the ``run`` command's task selection. None (doit builds the
        plugin): only when the process is doit's command line, after `front_door`;
        ``python -m continuity`` (`continuity.__main__`) checks its argv itself and passes
        True."""
        if command_line is None:
            front_door()
            command_line = _is_doit_command_line(sys.argv)
        self.command_line = command_line
        super().__init__()

    def setup(self, opt_values: Any) -> None:
        self.opt_values = opt_values  # the command's options: doit list's, to group
        super().setup(opt_values)

    def load_tasks(self, cmd: Any, pos_args: list[str]) -> list[Any]:
        tasks: list[Any] = super().load_tasks(cmd, pos_args)
        names = [t.name for t in tasks]
        groups = getattr(self, "namespace", {}).get("TASK_GROUPS")
        if self.command_line and getattr(cmd, "name", "") == "list" and groups is not None:
            given = getattr(self, "opt_values", {})
            plain = not any(given.get(o) for o in _LIST_OPTIONS) and given.get("sort") == "name"
            if plain and not pos_args:  # doit list: the tasks by group, exit 0
                print(grouped_listing(groups, _task_docs(tasks)))
                raise SystemExit(0)
        # doit help TASK prints what doit TASK --help prints: one help format
        helped = getattr(cmd, "name", "") == "help" and len(pos_args) == 1
        if self.command_line and helped and pos_args[0] in names:
            self._print_help(tasks, pos_args[0])
        if getattr(cmd, "execute_tasks", False) and self.command_line:
            asked = help_asked(pos_args, names)
            if asked is not None:  # doit TASK --help: the task's help, exit 0
                self._print_help(tasks, asked)
            problem = selection_problem(
                pos_args,
                {t.name: [*t.params, *t.creator_params] for t in tasks},
                [
                    target
                    for t in tasks
                    for target in (*t.targets, *(os.path.abspath(x) for x in t.targets))
                ],
            )
            if problem is not None:
                print(str(problem), file=sys.stderr, flush=True)
                raise SystemExit(EXIT_USAGE)
        return tasks

    def _print_help(self, tasks: list[Any], name: str) -> None:
        """Print task `name`'s help (`task_help`) and exit 0."""
        task = next(t for t in tasks if t.name == name)
        # doit keeps only a docstring's first line (task.doc); help shows it all
        creator = getattr(self, "namespace", {}).get(f"task_{name}")
        doc = inspect.getdoc(creator) if creator is not None else None
        print(task_help(name, doc or task.doc, [*task.params, *task.creator_params]))
        raise SystemExit(0)


_TaskGroups = Sequence[tuple[str, Sequence[str]]]


def grouped_listing(groups: _TaskGroups, docs: Mapping[str, str]) -> str:
    """``doit list``'s lines (a task's name padded as doit pads it, then its one-line
    doc) under a heading per group of `groups`, in their order; a task of `docs` that no
    group names comes last, under "Other". Task names stay at the start of their line
    (`continuity.commands.reference.task_names` reads them)."""
    placed = {name for _, names in groups for name in names}
    sections = [(heading, [n for n in names if n in docs]) for heading, names in groups]
    sections.append(("Other", sorted(n for n in docs if n not in placed)))
    width = max((len(name) for name in docs), default=0) + 3
    lines: list[str] = []
    for heading, names in sections:
        if names:
            lines += [*([""] if lines else []), f"{heading}:"]
            lines += [f"{name:<{width}}{docs[name]}".rstrip() for name in names]
    return "\n".join(lines)


def _task_docs(tasks: Sequence[Any]) -> dict[str, str]:
    """Public tasks (no subtask, no ``_`` name) and their one-line docs."""
    return {t.name: t.doc or "" for t in tasks if not t.subtask_of and not t.name.startswith("_")}


class GroupedHelp(Help):  # type: ignore[misc]
    """doit's ``help``; without a task or command it first lists the tasks as
    ``doit list`` groups them, then prints doit's own usage. On doit's command line, a
    name that is no task or command is refused as ``doit NAME`` is (``task_unknown``,
    with the nearest name as a hint; exit status 2) rather than answered with doit's
    usage and exit 0."""

    name = "help"

    def _execute(self, pos_args: list[str]) -> bool:
        """doit's help for one task (after the tasks are loaded); an unknown name on the
        command line is one coded line on stderr and exit status 2."""
        if super()._execute(pos_args):
            return True
        if not getattr(self.loader, "command_line", False):
            return False  # a program driving doit: doit's usage, as doit answers
        problem = _unknown_task(
            pos_args[0],
            list(_task_docs(self.task_list)),
            what="task or command",
            others=sorted(self.cmds),
        )
        print(str(problem), file=sys.stderr, flush=True)
        raise SystemExit(EXIT_USAGE)

    def execute(self, params: Any, args: list[str]) -> int:
        if args:
            return int(super().execute(params, args))
        try:
            self.loader.setup(params)
            self.loader.load_doit_config()
            tasks = self.loader.load_tasks(cmd=self, pos_args=[])
        except InvalidDodoFile:  # no dodo.py here: doit's usage alone, as doit does
            tasks = None
        groups = getattr(self.loader, "namespace", {}).get("TASK_GROUPS")
        if tasks is not None and groups is not None:
            print(
                "doit TASK [options] runs a task; doit help TASK (or doit TASK --help) "
                f"shows its options.\n\n{grouped_listing(groups, _task_docs(tasks))}\n"
            )
        self.print_usage(self.cmds)
        return 0
