"""Layers point one way: the store loads neither pyspark nor dbt; the engine never loads dbt."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT_DIR = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.unit


def _loaded(import_stmt: str) -> set[str]:
    code = f"{import_stmt}\nimport sys\nprint(' '.join(sorted(m.split('.')[0] for m in sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return set(out.stdout.split())


def test_storage_imports_neither_pyspark_nor_dbt():
    mods = _loaded("import tablets.storage, tablets.storage.table, tablets.storage.dv")
    assert "pyspark" not in mods
    assert "dbt" not in mods


def test_package_root_is_light():
    mods = _loaded("import tablets")
    assert "pyspark" not in mods and "dbt" not in mods


def test_engine_never_imports_dbt():
    mods = _loaded("import tablets.engine.executor, tablets.db")
    assert "pyspark" in mods
    assert "dbt" not in mods


# --- the import graph, read from the code (ast): one way down, no circles ----------------------

# The layers, top first: a module may import its own layer and those below it, never one above.
# A module belongs to the first entry whose name is the module's or a package above it; a
# top-level module of ``tablets`` not named here (a statement kind of the front door) is the front
# door's. Written here once; the README's Layout section and each package's docstring say the same.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("dbt.adapters.tablets",),  # the dbt plugin (macros call it)
    ("tablets",),  # the front door: Database, connect, the statement kinds (tablets.statements), reads, ...
    ("tablets.sql",),  # statement text -> spec (sqlglot)
    ("tablets.engine",),  # plans and runs specs
    ("tablets.spark",),  # the session, catalog tables, scans, data source
    ("tablets.spec",),  # the statement types and their conditions
    ("tablets.storage",),  # the tablet store
    ("tablets.exceptions", "tablets.settings", "tablets.sqltext"),  # leaves
)

ROOTS = {"tablets": ROOT_DIR / "adapter" / "tablets", "dbt.adapters.tablets": ROOT_DIR / "dbt" / "adapters" / "tablets"}


def _modules() -> dict[str, Path]:
    out = {}
    for package, folder in ROOTS.items():
        for path in sorted(folder.rglob("*.py")):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join([package, *parts])] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The modules of this code that ``name`` imports, anywhere in it (functions too; not under
    ``if TYPE_CHECKING``, which runs no import)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    tree = ast.parse(path.read_text(), str(path))
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for b in node.body for n in ast.walk(b))
    found = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, *([base] if base else [])])
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in modules:  # tablets.spark.catalog.lookup -> tablets.spark.catalog
                t = t.rpartition(".")[0]
            if t and t != name:
                found.add(t)
    return found


def _layer(name: str) -> int:
    best = None
    for i, names in enumerate(LAYERS):
        for n in names:
            if (name == n or name.startswith(n + ".")) and (best is None or len(n) > len(best[1])):
                best = (i, n)
    assert best is not None, f"{name} is in no layer of LAYERS"
    return best[0]


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def test_layers_point_one_way():
    up = [
        f"{m} ({LAYERS[_layer(m)][0]}) imports {t} ({LAYERS[_layer(t)][0]})"
        for m, targets in _graph().items()
        for t in sorted(targets)
        if _layer(t) < _layer(m)
    ]
    assert not up, "imports of a layer above:\n" + "\n".join(up)


# what the dbt plugin may take from the engine: its front door (``tablets``, ``tablets.db``,
# ``tablets.sessions``, ...) and the leaves, never a room behind it (sql, engine, spark, spec, storage)
BEHIND_THE_FRONT_DOOR = ("tablets.sql", "tablets.engine", "tablets.spark", "tablets.spec", "tablets.storage")


def test_dbt_comes_through_the_front_door():
    behind = [
        f"{m} imports {t}"
        for m, targets in _graph().items()
        if m.startswith("dbt.adapters.tablets")
        for t in sorted(targets)
        if any(t == room or t.startswith(room + ".") for room in BEHIND_THE_FRONT_DOOR)
    ]
    assert not behind, "the dbt plugin reaches behind the front door:\n" + "\n".join(behind)


def test_statement_kinds_are_peers():
    """The handlers of ``tablets.statements`` never import each other: what two kinds share
    lives below them (``tablets.context``, ``tablets.rows``, ``tablets.asof``, spec, sql)."""
    kinds = [m for m in _graph() if m.startswith("tablets.statements.")]
    graph = _graph()
    peers = [f"{m} imports {t}" for m in kinds for t in sorted(graph[m]) if t.startswith("tablets.statements")]
    assert len(kinds) >= 10 and not peers, "\n".join(peers)


def test_no_import_circles():
    graph = _graph()
    circles, state, stack = [], {}, []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for t in sorted(graph.get(m, ())):
            if state.get(t) == 1:
                circles.append(" -> ".join(stack[stack.index(t) :] + [t]))
            elif t not in state:
                visit(t)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    assert not circles, "import circles:\n" + "\n".join(circles)


def test_the_graph_is_read():
    graph = _graph()
    assert "tablets.statements" in graph["tablets.db"]
    assert "tablets.engine.executor" in graph["tablets.statements.merge"]
    assert "tablets.storage.table" in graph["tablets.spark.catalog"]


MAX_LINES = 600  # a module longer than this holds more than one job (issue 27)


def test_no_module_is_over_600_lines():
    long = [
        f"{p.relative_to(ROOT_DIR)}: {n} lines"
        for base in ("adapter/tablets", "dbt/adapters/tablets")
        for p in sorted((ROOT_DIR / base).rglob("*.py"))
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    ]
    assert not long, "modules over 600 lines (split them by job):\n" + "\n".join(long)


def test_no_private_name_is_imported_from_another_module():
    """A name another module needs is public: ``from tablets.x import _y`` hides who relies on it."""
    bad = []
    for name, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(("tablets", "dbt.adapters.tablets")):
                bad += [
                    f"{name}: from {node.module} import {a.name}"
                    for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")
                ]
    assert not bad, "\n".join(bad)


def test_test_files_have_unique_names():
    """pytest imports test files by base name (tests/ holds no packages): two files of one name in
    different folders stop the whole run at collection."""
    seen: dict[str, Path] = {}
    clashes = []
    for path in sorted((ROOT_DIR / "tests").rglob("test_*.py")):
        if path.name in seen:
            clashes.append(f"{seen[path.name].relative_to(ROOT_DIR)} and {path.relative_to(ROOT_DIR)}")
        seen.setdefault(path.name, path)
    assert not clashes, clashes
