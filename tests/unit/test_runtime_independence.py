"""The layers of kailab, checked from its source: exercises, checks and evidence are the same on every runtime (they
never look at which one runs), the runtime interface knows no runtime, the runtimes know no class, nothing above the
runtimes asks which runtime it has, and no module imports itself round a circle.

The import graph is read with ``ast``: every ``import`` and ``from … import`` of a kailab module, at the top of a file
or inside a function (an import inside a function still ties the two modules together); only imports for type
checkers (``if TYPE_CHECKING:``), which never run, are left out.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import kailab

PACKAGE = Path(kailab.__file__).parent
INTERFACE = "kailab.runtimes.base"
REGISTRY = "kailab.runtimes"  # knows every runtime: only the command layer may use it
CLASSROOM = "kailab.classroom"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}
# The top, which may use any runtime: the command line, the lab it opens (kailab.lab: the registry builds its
# runtime), the doctor (every runtime's tools).
COMMANDS = {"kailab.cli", "kailab.__main__", "kailab.lab", "kailab.doctor"} | {
    m for m in MODULES if m.startswith("kailab.commands")
}
IMPLEMENTATIONS = {m for m in MODULES if m.startswith(REGISTRY + ".") and m != INTERFACE}
SHARED = sorted(set(MODULES) - IMPLEMENTATIONS - COMMANDS - {REGISTRY, INTERFACE})


def _typing_only(node: ast.AST) -> bool:
    """``if TYPE_CHECKING:`` — imports for type checkers only, never run."""
    test = getattr(node, "test", None) if isinstance(node, ast.If) else None
    return (
        isinstance(test, ast.Name)
        and test.id == "TYPE_CHECKING"
        or isinstance(test, ast.Attribute)
        and test.attr == "TYPE_CHECKING"
    )


def _run_nodes(tree: ast.AST):
    """Every node that runs, leaving out the bodies of ``if TYPE_CHECKING:`` (their ``else`` runs)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if _typing_only(node):
            todo.extend(node.orelse)
        else:
            todo.extend(ast.iter_child_nodes(node))


def imports_of(source: str, name: str, is_package: bool, known: set[str]) -> set[str]:
    """The kailab modules a module's source imports when it runs (``from pkg import mod`` counts as ``pkg.mod``)."""
    package = name if is_package else name.rpartition(".")[0]
    out = set()
    for node in _run_nodes(ast.parse(source)):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from . import x, from ..y import z
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            for a in node.names:
                out.add(f"{base}.{a.name}" if f"{base}.{a.name}" in known else base)
    return {m for m in out if m in known and m != name}


GRAPH = {m: imports_of(p.read_text(), m, p.name == "__init__.py", set(MODULES)) for m, p in MODULES.items()}


def reachable(start: str, graph: dict[str, set[str]] = GRAPH) -> dict[str, str]:
    """Every module ``start`` imports, directly or not → the module that imports it (to name the path)."""
    seen, todo = {}, [start]
    while todo:
        m = todo.pop()
        for n in graph.get(m, ()):
            if n not in seen and n != start:
                seen[n] = m
                todo.append(n)
    return seen


def path_to(start: str, end: str, via: dict[str, str]) -> str:
    chain = [end]
    while chain[-1] != start and chain[-1] in via:
        chain.append(via[chain[-1]])
    return " → ".join(reversed(chain))


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles: strongly connected groups of more than one module, or a module importing itself."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out = []

    def visit(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1 or v in graph[v]:
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def forbidden(start: str, bad) -> list[str]:
    via = reachable(start)
    return [path_to(start, m, via) for m in sorted(via) if bad(m)]


# --- the rules ---------------------------------------------------------------------------------------------------


def test_no_import_circle_among_kailab_modules():
    assert cycles(GRAPH) == []


def test_the_runtime_interface_imports_no_runtime():
    assert INTERFACE in MODULES and IMPLEMENTATIONS >= {
        "kailab.runtimes.local",
        "kailab.runtimes.kind",
        "kailab.runtimes.existing",
    }
    assert forbidden(INTERFACE, lambda m: m in IMPLEMENTATIONS or m == REGISTRY) == []


@pytest.mark.parametrize("module", SHARED)
def test_a_shared_layer_imports_no_runtime(module):
    """Scenarios, checks, status, watch, evidence, explain, lesson, fleet… need only a kubeconfig: neither they nor
    anything they import, however deep, imports a runtime, the registry of runtimes or the running lab (kailab.lab)."""
    assert forbidden(module, lambda m: m in IMPLEMENTATIONS or m in (REGISTRY, "kailab.lab")) == []


@pytest.mark.parametrize("module", sorted(IMPLEMENTATIONS | {INTERFACE, REGISTRY}))
def test_the_runtimes_never_import_the_classroom(module):
    """A runtime offers partitions (runtimes.base.PartitionHost); the class holds one, never the other way round."""
    assert forbidden(module, lambda m: m == CLASSROOM or m.startswith(CLASSROOM + ".")) == []


RUNTIME_CLASSES = {"LocalRuntime", "KindRuntime", "ExistingRuntime"}


def isinstance_of_a_runtime(source: str) -> list[int]:
    """The lines of ``isinstance(x, LocalRuntime)`` and the like (a runtime's class, alone or in a tuple)."""

    def names(node: ast.AST) -> set[str]:
        if isinstance(node, ast.Tuple):
            return {n for e in node.elts for n in names(e)}
        if isinstance(node, ast.Attribute):
            return {node.attr}
        return {node.id} if isinstance(node, ast.Name) else set()

    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("isinstance", "issubclass")
        and len(node.args) == 2
        and names(node.args[1]) & RUNTIME_CLASSES
    ]


@pytest.mark.parametrize("module", sorted(set(MODULES) - IMPLEMENTATIONS))
def test_nothing_above_the_runtimes_asks_which_runtime_it_has(module):
    """What a runtime offers beyond a kubeconfig is its ``capabilities()``; no module outside runtimes/ checks a
    runtime's class."""
    assert isinstance_of_a_runtime(MODULES[module].read_text()) == []


def interface_members(source: str, name: str) -> set[str]:
    """The public members of class ``name``: its methods, class attributes and what its ``__init__`` sets on self."""
    (cls,) = [n for n in ast.parse(source).body if isinstance(n, ast.ClassDef) and n.name == name]
    out = set()
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.add(node.name)
            if node.name == "__init__":
                out |= {
                    t.attr
                    for n in ast.walk(node)
                    if isinstance(n, (ast.Assign, ast.AnnAssign))
                    for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
                }
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.add(node.target.id)
        elif isinstance(node, ast.Assign):
            out |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return {m for m in out if not m.startswith("_")}


def test_the_runtime_interface_is_ten_members_and_its_capabilities():
    members = interface_members(MODULES[INTERFACE].read_text(), "Runtime")
    assert "capabilities" in members and "home" in members
    assert len(members - {"capabilities"}) <= 10, sorted(members)


@pytest.mark.parametrize("module", ["kailab.fleet", "kailab.kube", "kailab.labels", "kailab.labstate", "kailab.pods"])
def test_the_layers_under_the_scenarios_do_not_import_them(module):
    assert forbidden(module, lambda m: m.startswith("kailab.scenarios")) == []


def test_the_rules_cover_the_layers_the_issue_names():
    named = {
        "kailab.scenarios.engine",
        "kailab.scenarios.loader",
        "kailab.scenarios.model",
        "kailab.checks",
        "kailab.status",
        "kailab.watch",
        "kailab.evidence",
        "kailab.explain",
        "kailab.lesson",
        "kailab.fleet",
        "kailab.kube",
    }
    assert named <= set(SHARED)


# --- the rules' own checks: each finds what it is for --------------------------------------------------------------


def test_the_graph_sees_imports_inside_functions_and_from_a_package():
    source = "import kailab.fleet\ndef f():\n    from kailab import lab\n    from kailab.runtimes import local\n"
    known = {"kailab.fleet", "kailab.lab", "kailab.runtimes", "kailab.runtimes.local", "kailab.x"}
    assert imports_of(source, "kailab.x", False, known) == {"kailab.fleet", "kailab.lab", "kailab.runtimes.local"}
    assert imports_of("from . import lab\nfrom .runtimes import local\n", "kailab.x", False, known) == {
        "kailab.lab",
        "kailab.runtimes.local",
    }
    typing_only = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from kailab import lab\nelse:\n    import kailab.fleet\n"
    assert imports_of(typing_only, "kailab.x", False, known) == {"kailab.fleet"}


def test_a_circle_through_a_lazy_import_is_found():
    """The circle issue 23 names: the interface's registry imported every runtime, which import the interface."""
    graph = {"base": {"local"}, "local": {"local_kai", "base"}, "local_kai": {"base"}, "fleet": set()}
    assert cycles(graph) == [["base", "local", "local_kai"]]
    assert cycles({"a": {"a"}}) == [["a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_an_isinstance_of_a_runtime_is_found():
    assert isinstance_of_a_runtime("isinstance(rt, LocalRuntime)\nisinstance(x, (int, local.KindRuntime))\n") == [1, 2]
    assert isinstance_of_a_runtime("isinstance(rt, Runtime)\nisinstance(x, LocalSchedulerControl)\n") == []


def test_a_deep_import_of_a_runtime_is_named_with_its_path():
    graph = {"lesson": {"lab"}, "lab": {"registry"}, "registry": {"local"}, "local": set()}
    via = reachable("lesson", graph)
    assert path_to("lesson", "local", via) == "lesson → lab → registry → local"


def test_every_exercise_is_one_scenario_file_for_all_runtimes():
    """No runtime-specific copies of an exercise: one file each, loaded the same way."""
    from kailab.paths import EXERCISES
    from kailab.scenarios.loader import load_scenario

    files = sorted(EXERCISES.glob("*.yaml"))
    assert {f.stem for f in files} >= {"quota", "borrow", "reclaim", "gang", "priority", "baseline"}
    assert not [f for f in files if "kind" in f.stem or "local" in f.stem]
    assert all(load_scenario(f).steps for f in files)
