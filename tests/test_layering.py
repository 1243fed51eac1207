"""The package's layers import one way: the library core (configure, options, metrics, frames,
report, dummy, sessions) imports nothing of the tooling (bench, cluster), which imports the core."""

import ast
from pathlib import Path

import pyspark_shuffle

PACKAGE = Path(pyspark_shuffle.__file__).parent
TOOLING = ("bench", "cluster")
#: The command-line entry dispatches to each tool; the pytest plugin starts a cluster fixture.
ENTRY_POINTS = ("__main__.py", "testing")


def _imported(path: Path) -> set:
    """The pyspark_shuffle subpackages ``path`` imports, relative imports resolved."""
    module = path.relative_to(PACKAGE.parent).with_suffix("").parts
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = module[: len(module) - node.level]
                target = (*base, *(node.module.split(".") if node.module else ()))
                names = [(*target, alias.name) for alias in node.names]
            else:
                names = [tuple((node.module or "").split("."))]
        elif isinstance(node, ast.Import):
            names = [tuple(alias.name.split(".")) for alias in node.names]
        else:
            continue
        found.update(n[1] for n in names if len(n) > 1 and n[0] == "pyspark_shuffle")
    return found


def test_the_core_imports_no_tooling():
    offending = {}
    for path in PACKAGE.rglob("*.py"):
        layer = path.relative_to(PACKAGE).parts[0]
        if layer in TOOLING or layer in ENTRY_POINTS:
            continue
        bad = _imported(path) & set(TOOLING)
        if bad:
            offending[str(path.relative_to(PACKAGE))] = sorted(bad)
    assert offending == {}


def test_the_check_resolves_relative_imports():
    assert {"_configure", "_jvm"} <= _imported(PACKAGE / "sessions.py")
    # "from ..bench_run import" in bench/tables.py is pyspark_shuffle.bench_run.
    assert "bench_run" in _imported(PACKAGE / "bench" / "tables.py")


def _modules_imported(path: Path) -> set:
    """The modules of ``path``'s own subpackage that it imports (at module level or in a function)."""
    package = path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.ImportFrom) or node.level == 0:
            continue
        target = (*package[: len(package) - node.level + 1], *(node.module.split(".") if node.module else ()))
        if target == package:
            found.update(alias.name for alias in node.names)
        elif target[: len(package)] == package and len(target) == len(package) + 1:
            found.add(target[-1])
    return found


def _reaches(graph, start, goal, seen):
    return any(n == goal or (n not in seen and _reaches(graph, n, goal, seen | {n})) for n in graph[start])


def test_the_modules_of_each_subpackage_import_one_way():
    """A run never walks back and forth between two modules: within a subpackage, the modules'
    imports form no cycle (the cluster's lifecycle uses its system calls, never the reverse)."""
    cycles = []
    for package in [PACKAGE, *(p for p in PACKAGE.iterdir() if (p / "__init__.py").exists())]:
        modules = {p.stem: p for p in package.glob("*.py") if p.stem != "__init__"}
        graph = {name: _modules_imported(path) & set(modules) for name, path in modules.items()}

        cycles += [f"{package.name}/{name}" for name in graph if _reaches(graph, name, name, {name})]
    assert cycles == []


def test_the_cluster_system_calls_import_nothing_of_the_cluster():
    assert _modules_imported(PACKAGE / "cluster" / "system.py") == set()
    assert {"system", "plan", "state"} <= _modules_imported(PACKAGE / "cluster" / "lifecycle.py")


def test_the_cluster_faults_are_apart_from_its_lifecycle():
    """Cutting links and killing executors (faults.py) neither starts nor stops a cluster, and
    bringing one up or down (lifecycle.py) injects no fault."""
    assert "lifecycle" not in _modules_imported(PACKAGE / "cluster" / "faults.py")
    assert "faults" not in _modules_imported(PACKAGE / "cluster" / "lifecycle.py")
    assert "faults" in _modules_imported(PACKAGE / "cluster" / "observe.py")
