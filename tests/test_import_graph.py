"""The layout tells the truth: the pure core imports nothing of the shell, and no module imports in a cycle.

Read from the source with `ast`, so the test sees imports inside functions too (the CLI's lazy ones).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "ci_triage"
# What a pure module may use besides other core modules: the shared values and errors, the root
# package (for __version__), the standard library and the data libraries that stay in memory. The
# native regex engines (hyperscan, RE2) are registered into the core by the shell (ci_triage/engines.py).
CORE_MAY_IMPORT = ("ci_triage.core", "ci_triage.model", "ci_triage.errors")
CORE_THIRD_PARTY = {"numpy", "pandas", "rich"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            found.add(module)
            # `from ci_triage.core import timeline` imports the module ci_triage.core.timeline.
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


MODULES = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
GRAPH = {name: {i for i in _imports(path) if i in MODULES and i != name} for name, path in MODULES.items()}


def test_core_imports_only_core_model_errors_and_the_allowed_libraries():
    stdlib = set(sys.stdlib_module_names)
    wrong = []
    for name, path in MODULES.items():
        if not name.startswith("ci_triage.core"):
            continue
        for imported in _imports(path):
            top = imported.split(".")[0]
            if top == "ci_triage":
                ours = imported in ("ci_triage", "ci_triage.__version__") or imported.startswith(CORE_MAY_IMPORT)
                if not ours:
                    wrong.append(f"{name} imports {imported}")
            elif top not in stdlib and top not in CORE_THIRD_PARTY and top != "__future__":
                wrong.append(f"{name} imports {imported}")
    assert wrong == []


def test_the_pure_core_does_no_io_of_its_own():
    """No network, subprocess or environment access in core (files: only the package's own resources)."""
    banned = {"socket", "subprocess", "urllib.request", "http.client", "httpx", "github", "sqlite3"}
    wrong = [f"{name} imports {i}" for name, path in MODULES.items() if name.startswith("ci_triage.core")
             for i in _imports(path) if i in banned or i.split(".")[0] in {"httpx", "github"}]
    assert wrong == []


def test_no_product_module_imports_the_tests():
    """The per-job correlation kept as a test oracle (tests/core/timeline_oracle.py) stays out of the product."""
    wrong = [f"{name} imports {i}" for name, path in MODULES.items() for i in _imports(path)
             if i.split(".")[0] == "tests"]
    assert wrong == []


def _cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), i.e. import cycles."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target in sorted(GRAPH[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(GRAPH):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles():
    # A package's __init__ importing its own submodules (the CLI registering its command groups) is
    # the package's definition, not a cycle; anything else counts.
    assert _cycles() == []


def test_no_module_is_over_500_lines():
    long = {name: n for name, path in MODULES.items() if (n := len(path.read_text(encoding="utf-8").splitlines())) > 500}
    assert long == {}
