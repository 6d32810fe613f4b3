"""The package's imports follow docs/architecture.md: layers point down, no cycles.

The layer table is read from the document itself, so the document and the code cannot
drift apart silently. Every import counts: module level, inside functions, and under
``if TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "continuity"
DOC = ROOT / "docs" / "architecture.md"

Rank = tuple[int, int]


def layer_table(text: str) -> dict[str, Rank]:
    """Unit name -> (layer, position in its layer), from the document's layer table."""
    ranks: dict[str, Rank] = {}
    for line in text.splitlines():
        match = re.match(r"\|\s*(\d+)\s*\|([^|]*)\|", line)
        if not match:
            continue
        layer = int(match.group(1))
        for position, unit in enumerate(re.findall(r"`([a-z_]+)`", match.group(2))):
            assert unit not in ranks, f"{unit} is listed twice in {DOC.name}"
            ranks[unit] = (layer, position)
    return ranks


def module_names() -> dict[str, Path]:
    """Every module of the package: dotted name -> file."""
    names = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


def unit_of(module: str) -> str:
    """``continuity.harness.loop`` -> ``harness``; the package itself -> ``continuity``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "continuity"


def resolve_from(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    """The module a ``from`` import in `module` names, relative imports resolved."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports_of(module: str, path: Path, known: Mapping[str, Path]) -> Iterator[tuple[str, str]]:
    """(imported module, name or "") for every continuity import in one module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "continuity":
                    yield alias.name, ""
        elif isinstance(node, ast.ImportFrom):
            target = resolve_from(module, node, path.name == "__init__.py")
            if target.split(".")[0] != "continuity":
                continue
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                if submodule in known:
                    yield submodule, ""
                else:
                    yield target, alias.name


def import_graph() -> dict[str, set[str]]:
    known = module_names()
    graph: dict[str, set[str]] = {name: set() for name in known}
    for module, path in known.items():
        for target, _name in imports_of(module, path, known):
            if target != module:
                graph[module].add(target)
    return graph


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in graph.get(node, ()):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def upward_imports(graph: Mapping[str, set[str]], ranks: Mapping[str, Rank]) -> list[str]:
    problems = []
    for module, targets in sorted(graph.items()):
        source = unit_of(module)
        for target in sorted(targets):
            unit = unit_of(target)
            if unit in (source, "continuity") or source == "continuity":
                continue
            if ranks[unit] >= ranks[source]:
                problems.append(
                    f"{module} -> {target} ({source} {ranks[source]} -> {unit} {ranks[unit]})"
                )
    return problems


def test_every_unit_is_placed_in_a_layer() -> None:
    ranks = layer_table(DOC.read_text(encoding="utf-8"))
    units = {unit_of(m) for m in module_names()} - {"continuity"}
    assert sorted(units - set(ranks)) == [], "units missing from docs/architecture.md"
    assert sorted(set(ranks) - units) == [], "docs/architecture.md lists units that do not exist"


def test_no_module_import_cycles() -> None:
    assert cycles(import_graph()) == []


def test_no_unit_import_cycles() -> None:
    units: dict[str, set[str]] = {}
    for module, targets in import_graph().items():
        units.setdefault(unit_of(module), set()).update(
            unit_of(t) for t in targets if unit_of(t) != unit_of(module)
        )
    assert cycles(units) == []


def test_imports_point_down_the_layers() -> None:
    ranks = layer_table(DOC.read_text(encoding="utf-8"))
    assert upward_imports(import_graph(), ranks) == []


def test_no_private_names_cross_units() -> None:
    known = module_names()
    problems = []
    for module, path in known.items():
        for target, name in imports_of(module, path, known):
            if unit_of(target) == unit_of(module):
                continue
            private_module = any(part.startswith("_") for part in target.split(".")[1:])
            if name.startswith("_") or private_module:
                problems.append(f"{module} imports {target} {name}".strip())
    assert problems == []


def test_the_package_never_imports_rules_or_dodo() -> None:
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            assert not any(n.split(".")[0] in ("rules", "dodo") for n in names), path


def task_modules() -> dict[str, Path]:
    """`rules/` (the task factories) and `dodo.py`: dotted name -> file."""
    names = {"dodo": ROOT / "dodo.py"}
    for path in sorted((ROOT / "rules").glob("*.py")):
        names["rules" if path.stem == "__init__" else f"rules.{path.stem}"] = path
    return names


def task_imports() -> dict[str, set[str]]:
    """Every import of `rules/` and `dodo.py` (function-local and type-checking too):
    module -> the modules it names (``rules.x``, ``continuity.y``, ``dodo``)."""
    graph: dict[str, set[str]] = {}
    for module, path in task_modules().items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module)
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
        graph[module] = {n for n in found if n.split(".")[0] in ("rules", "dodo", "continuity")}
    return graph


def test_rules_and_dodo_have_no_import_cycles() -> None:
    known = set(task_modules())
    graph = task_imports()
    internal = {m: {t for t in targets if t in known and t != m} for m, targets in graph.items()}
    assert cycles(internal) == []


def test_dodo_only_wires_rules_and_nothing_imports_dodo() -> None:
    graph = task_imports()
    assert not any("dodo" in targets for targets in graph.values())
    glue = {"continuity.argv", "continuity.graph", "continuity.interrupts"}
    foreign = {t for t in graph["dodo"] if t.split(".")[0] == "continuity"}
    assert {t.rsplit(".", 1)[0] if t.rsplit(".", 1)[0] in glue else t for t in foreign} <= glue


def test_rules_use_no_private_names_of_the_package() -> None:
    problems = [
        f"{module} imports {target}"
        for module, targets in task_imports().items()
        for target in targets
        if target.startswith("continuity.")
        and any(part.startswith("_") for part in target.split(".")[1:])
    ]
    assert problems == []


def packages() -> dict[str, frozenset[str]]:
    """Every package below `continuity` (``continuity.runner``, ``continuity.runner.units``,
    ...) -> its interface: the names in its ``__all__`` (names it defines or re-exports,
    and the submodules other packages may import)."""
    found = {}
    for name, path in module_names().items():
        if path.name == "__init__.py" and name.count(".") >= 1:
            found[name] = frozenset(getattr(importlib.import_module(name), "__all__", ()))
    return found


def import_edges() -> Iterator[tuple[str, str, str]]:
    """(importer, imported module, name or "") for the package, `rules/` and `dodo.py`."""
    known = module_names()
    for module, path in {**known, **task_modules()}.items():
        for target, name in imports_of(module, path, known):
            yield module, target, name


def unexported_imports(
    edges: Iterable[tuple[str, str, str]], interfaces: Mapping[str, frozenset[str]]
) -> list[str]:
    """Each import that steps into a package from outside it through a name (a module or
    a re-exported name) its ``__all__`` does not list. Inside a package, every module
    may import every other; a nested package (``runner.units``) is a package of its own."""
    problems = []
    for importer, target, name in edges:
        path = [*target.split("."), *([name] if name else [])]
        for depth in range(2, len(path)):
            package = ".".join(path[:depth])
            if package not in interfaces:
                break  # a module: what follows is a name inside it
            inside = importer == package or importer.startswith(package + ".")
            if not inside and path[depth] not in interfaces[package]:
                problems.append(f"{importer} -> {package}.{path[depth]} (not in its __all__)")
    return sorted(set(problems))


def test_packages_are_entered_only_through_their_interface() -> None:
    """Another package (or `rules/`, or `dodo.py`) imports only what a package's
    ``__all__`` lists; a module left out of it is the package's own business."""
    assert unexported_imports(import_edges(), packages()) == []


def test_every_interface_entry_exists() -> None:
    """An ``__all__`` entry is a name the package holds or a submodule it has."""
    known = module_names()
    missing = [
        f"{package}.{entry}"
        for package, exported in packages().items()
        for entry in sorted(exported)
        if f"{package}.{entry}" not in known
        and not hasattr(importlib.import_module(package), entry)
    ]
    assert missing == []


def test_interface_checker_refuses_a_private_module() -> None:
    """The test of the test: an import of a module its package does not export is found,
    from another package, from `rules/`, and through a nested package; imports inside a
    package and through exported names pass."""
    interfaces = {
        "continuity.runner": frozenset({"units", "real"}),
        "continuity.runner.units": frozenset({"build"}),
        "continuity.errors": frozenset({"UsageError"}),
    }
    edges = [
        ("continuity.report.collect", "continuity.runner.children", ""),  # not exported
        ("rules.units", "continuity.runner.units.worker", ""),  # nested, not exported
        ("continuity.runner.real", "continuity.runner.units.store", ""),  # sibling package
        ("continuity.runner.real", "continuity.runner.children", ""),  # inside: fine
        ("continuity.runner.units.run", "continuity.runner.units.worker", ""),  # inside
        ("rules.units", "continuity.runner.units.build", "build_units"),  # exported
        ("continuity.plan.guards", "continuity.errors", "UsageError"),  # exported name
        ("continuity.plan.guards", "continuity.errors", "_refuse"),  # not exported
    ]
    assert unexported_imports(edges, interfaces) == [
        "continuity.plan.guards -> continuity.errors._refuse (not in its __all__)",
        "continuity.report.collect -> continuity.runner.children (not in its __all__)",
        "continuity.runner.real -> continuity.runner.units.store (not in its __all__)",
        "rules.units -> continuity.runner.units.worker (not in its __all__)",
    ]


def test_every_import_form_becomes_an_edge(tmp_path: Path) -> None:
    """The edges the interface check reads come from every form of import: plain and
    dotted, ``from`` a package or a module, relative, inside a function and under
    ``TYPE_CHECKING``; a name that is a submodule becomes the submodule's edge."""
    source = tmp_path / "m.py"
    source.write_text(
        "import continuity.runner.units.worker\n"
        "from continuity.runner.units import store\n"
        "from continuity.errors import UsageError\n"
        "from . import guards\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from continuity.runner.children import ZYGOTE_PRELOAD\n"
        "def f():\n"
        "    from continuity.runner.units.run import run_unit\n"
    )
    known = module_names()
    edges = set(imports_of("continuity.plan.probe_only", source, known))
    assert edges == {
        ("continuity.runner.units.worker", ""),
        ("continuity.runner.units.store", ""),
        ("continuity.errors", "UsageError"),
        ("continuity.plan.guards", ""),
        ("continuity.runner.children", "ZYGOTE_PRELOAD"),
        ("continuity.runner.units.run", "run_unit"),
    }
    interfaces = {
        "continuity.runner": frozenset({"units"}),
        "continuity.runner.units": frozenset({"worker", "store"}),
        "continuity.plan": frozenset(),  # the importer's own package: never checked
    }
    found = unexported_imports([("continuity.plan.probe_only", t, n) for t, n in edges], interfaces)
    assert found == [
        "continuity.plan.probe_only -> continuity.runner.children (not in its __all__)",
        "continuity.plan.probe_only -> continuity.runner.units.run (not in its __all__)",
    ]


# The checker itself must catch what it is for: a small synthetic graph.
def test_checker_finds_cycles_and_upward_imports() -> None:
    graph = {
        "continuity.store.a": {"continuity.traces.b"},
        "continuity.traces.b": {"continuity.store.a"},
        "continuity.harness.c": {"continuity.errors"},
    }
    assert cycles(graph) == [["continuity.store.a", "continuity.traces.b"]]
    ranks = {"errors": (0, 0), "store": (1, 0), "traces": (2, 0), "harness": (7, 0)}
    assert upward_imports(graph, ranks) == [
        "continuity.store.a -> continuity.traces.b (store (1, 0) -> traces (2, 0))"
    ]
    assert layer_table("| 3 | `a`, `b` | x |\n| 1 | `c` | y |") == {
        "a": (3, 0),
        "b": (3, 1),
        "c": (1, 0),
    }


def test_layer_table_is_read_from_the_document() -> None:
    ranks = layer_table(DOC.read_text(encoding="utf-8"))
    assert ranks["errors"] < ranks["store"] < ranks["traces"] < ranks["harness"]
    assert ranks["harness"] < ranks["sampling"] < ranks["runner"] < ranks["report"]


MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80


def _generated_data(tree: ast.Module) -> bool:
    """A generated snapshot: "generated snapshot" and "do not edit" in its docstring, and
    no function or class anywhere in it."""
    doc = ast.get_docstring(tree) or ""
    code = any(
        isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) for n in ast.walk(tree)
    )
    return "generated snapshot" in doc and "do not edit" in doc and not code


def test_no_giant_modules_or_functions() -> None:
    """A module over 500 lines or a function over 80 is a seam not yet split. A generated
    data snapshot (its docstring says so, and it defines no function or class: data
    with no seam, rewritten only by its generator) is not code and may be longer."""
    big_modules, long_functions = [], []
    for module, path in {**module_names(), **task_modules()}.items():
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        if text.count("\n") > MAX_MODULE_LINES and not _generated_data(tree):
            big_modules.append(f"{module}: {text.count(chr(10))} lines")
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    long_functions.append(f"{module}.{node.name}: {length} lines")
    assert big_modules == []
    assert long_functions == []
