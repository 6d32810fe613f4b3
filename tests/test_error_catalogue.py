"""The error catalogue (`continuity.errors.catalogue`) and the source agree.

Every code the source emits is an entry. A code is emitted wherever it appears: as
``code=`` / ``default_code =`` (plain or f-string, up to its first placeholder), or at
the head of a coded line, a string that starts ``<code>: ``
(``print(f"probe_request_invalid: {error}")``, an outcome's error text). The scan reads
the syntax tree, so a code inside an f-string counts too.

The other way round, every entry names a class of `continuity.errors` and a module that
exists, no code is listed twice, and every code but a reserved one appears in a string
of the source (a reported code is often only a table's or a dict's string).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import continuity.errors
from continuity.agents.sandbox import SDK_FILES
from continuity.errors.catalogue import ENTRIES

REPO = Path(__file__).resolve().parents[1]
_CODE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")
_HEAD = re.compile(r"([a-z][a-z0-9]*(?:_[a-z0-9]+)+): ")


def _leading_text(node: ast.expr) -> str | None:
    """A string literal's text, or an f-string's text up to its first placeholder."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values:
        first = node.values[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            return first.value
    return None


def emitted_codes(source: str) -> set[str]:
    codes: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.keyword) and node.arg in ("code", "default_code"):
            text = _leading_text(node.value)
            if text and _CODE.fullmatch(text.split(":")[0]):
                codes.add(text.split(":")[0])
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            named = any(
                isinstance(t, ast.Name) and t.id in ("code", "default_code") for t in targets
            )
            text = _leading_text(node.value) if named and node.value is not None else None
            if text and _CODE.fullmatch(text):
                codes.add(text)
        text = _leading_text(node) if isinstance(node, ast.expr) else None
        if text:
            match = _HEAD.match(text)
            if match:
                codes.add(match.group(1))
    return codes


CATALOGUE = REPO / "continuity" / "errors" / "catalogue"


def _sources() -> list[Path]:
    """The package and the doit rules, without the catalogue itself."""
    paths = [*(REPO / "continuity").rglob("*.py"), *(REPO / "rules").rglob("*.py")]
    return [p for p in paths if CATALOGUE not in p.parents]


def test_the_scan_finds_codes_wherever_they_are_emitted() -> None:
    source = (
        'raise E("x", code="alpha_one")\n'
        "class C:\n    default_code = 'beta_two'\n"
        'print(f"gamma_three: {error}")\n'
        'raise E("y", code=f"delta_four:{kind}")\n'
        'outcome = O(1, None, "epsilon_five: the child died")\n'
        'note = "not a code: plain text"\n'
    )
    assert emitted_codes(source) == {
        "alpha_one",
        "beta_two",
        "gamma_three",
        "delta_four",
        "epsilon_five",
    }


def _task_names() -> set[str]:
    """doit's task names: a line headed by one is that task's summary, not a code."""
    text = "".join(p.read_text(encoding="utf-8") for p in (REPO / "rules").glob("*.py"))
    return set(re.findall(r"^def task_(\w+)", text, re.MULTILINE))


def test_every_emitted_code_is_in_the_catalogue() -> None:
    catalogued = {entry.code for entry in ENTRIES}
    codes = set().union(*(emitted_codes(p.read_text(encoding="utf-8")) for p in _sources()))
    assert "lookup_budget" in _task_names()
    codes -= _task_names()
    assert len(codes) > 80  # the scan itself works
    assert sorted(codes - catalogued) == []


def test_no_code_is_listed_twice() -> None:
    codes = [entry.code for entry in ENTRIES]
    assert sorted(c for c in set(codes) if codes.count(c) > 1) == []
    assert all(_CODE.fullmatch(c) for c in codes), [c for c in codes if not _CODE.fullmatch(c)]


def test_every_entry_names_a_class_of_the_tree_and_a_module_that_exists() -> None:
    problems = []
    for entry in ENTRIES:
        for name in (entry.error, *entry.also):
            cls = getattr(continuity.errors, name, None)
            if not (isinstance(cls, type) and issubclass(cls, continuity.errors.ContinuityError)):
                problems.append(f"{entry.code}: {name} is no class of continuity.errors")
        path = REPO.joinpath(*entry.source.split("."))
        if not (path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()):
            problems.append(f"{entry.code}: no module {entry.source}")
        if not entry.meaning or "\n" in entry.meaning or "|" in entry.meaning:
            problems.append(f"{entry.code}: the meaning is not one line of table text")
    assert problems == []


def test_every_class_default_code_is_its_own_entry() -> None:
    by_code = {entry.code: entry for entry in ENTRIES}
    problems = []
    for name in continuity.errors.__all__:
        cls = getattr(continuity.errors, name)
        if isinstance(cls, type) and issubclass(cls, continuity.errors.ContinuityError):
            entry = by_code.get(cls.default_code)
            if entry is None or entry.error != name:
                problems.append(f"{name}.default_code {cls.default_code}")
    assert problems == []


def _source_strings(source: str) -> str:
    """Every string literal of `source` but docstrings, one a line (f-strings' text too)."""
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return "\n".join(
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        if id(node) not in docstrings
    )


def test_every_catalogued_code_is_emitted_unless_reserved() -> None:
    text = "\n".join(_source_strings(p.read_text(encoding="utf-8")) for p in _sources())
    emitted = {e.code for e in ENTRIES if re.search(rf"\b{e.code}\b", text)}
    assert sorted(e.code for e in ENTRIES if e.kind != "reserved" and e.code not in emitted) == []
    # a reserved code that the source now emits is no longer reserved
    assert sorted(e.code for e in ENTRIES if e.kind == "reserved" and e.code in emitted) == []


def test_the_sandboxed_sdk_never_imports_the_catalogue() -> None:
    """The outside-agent sandbox binds only `SDK_FILES`; the catalogue is not among them,
    so nothing they import may import it."""
    for name in SDK_FILES:
        tree = ast.parse((REPO / "continuity" / name).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or "", *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            assert not any("catalogue" in n for n in names), (name, names)
