"""Check that imports only go down: cli -> jobs -> engine / report / metrics -> providers / store
-> config, text, errors. Prints every import circle and every upward import; exits 1 if any.

Usage: python scripts/check_layers.py [ROOT]   (ROOT defaults to the repository root)
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

PACKAGES = ("harness", "providers", "metrics")

# Module prefix -> layer; the longest matching prefix wins. A module may import its own layer
# or any lower one (circles are caught separately).
LAYERS = {
    "contam.harness.cli": 7,
    "contam.harness.view": 6,  # the web app: over report/ and store.access
    "contam.harness.jobs": 5,
    # Two commands' option declarations, plain dataclasses over declare: the report's and the
    # store's messages name a flag as its declaration spells it (flag_of).
    "contam.harness.jobs.options.report": 1,
    "contam.harness.jobs.options.store_tools": 1,
    "contam.harness.api": 5,
    "contam.harness.emulator": 5,
    "contam.harness.display": 4,
    "contam.harness.logs": 4,  # console and run-file logging: redacts with contam.providers.base
    "contam.harness.engine": 3,
    "contam.harness.report": 3,
    "contam.harness.prompts": 3,
    "contam.metrics": 3,
    "contam.providers": 2,
    "contam.harness.store": 2,
    "contam.harness.config": 1,
    "contam.harness.text": 1,
    "contam.harness.errors": 1,
    "contam.harness.declare": 1,  # how an option is declared: its field and its flag, in one place
    "contam.harness.labels": 1,  # the label vocabulary: metrics/judge.py maps the judge's replies with it
    # The provider names: the config checks them, providers/ builds on them.
    "contam.harness.provider_names": 1,
    # The metric vocabulary: plain declarations that import nothing of contam (scorers named by
    # dotted path), read by the config's checks, the store's `cells` view and the report.
    "contam.metrics.metric_registry": 1,
    "contam.metrics.outcome": 1,  # what makes an answer correct, parsed against the registry
    "contam.harness": 1,  # the package itself: its version helper
}
# providers/ and metrics/ stay usable without the orchestration: from harness only these.
LEAF_PACKAGES = ("contam.providers", "contam.metrics")
# The two vocabularies are plain constants with no imports, so a leaf package stays standalone.
LEAF_MAY_IMPORT = ("contam.harness", "contam.harness.errors", "contam.harness.text", "contam.harness.labels", "contam.harness.provider_names")


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["contam", *parts])  # the import name: contam.harness.cli


def imported_modules(tree: ast.Module, importer: str, is_package: bool) -> Iterator[str]:
    """Every project module named by an import statement anywhere in the file."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, importer, is_package)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def _absolute(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    parts = importer.split(".")
    keep = len(parts) - node.level + (1 if is_package else 0)
    return ".".join(parts[:keep] + ([node.module] if node.module else []))


def import_graph(root: Path) -> dict[str, set[str]]:
    files = {module_name(root, p): p for pkg in PACKAGES for p in (root / pkg).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        named = imported_modules(tree, name, path.name == "__init__.py")
        graph[name] = {m for m in named if m in files and m != name}
    return graph


def layer(module: str) -> int:
    prefix = max((p for p in LAYERS if module == p or module.startswith(p + ".")), key=len)
    return LAYERS[prefix]


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    found = []
    for importer, targets in sorted(graph.items()):
        for target in sorted(targets):
            if _is_upward(importer, target):
                found.append(f"{importer} -> {target}")
    return found


def _package(module: str) -> str:
    """contam.harness.jobs.run -> contam.harness."""
    return ".".join(module.split(".")[:2])


def _is_upward(importer: str, target: str) -> bool:
    if _package(importer) in LEAF_PACKAGES and _package(target) == "contam.harness":
        return target not in LEAF_MAY_IMPORT
    # A package's __init__ re-exporting its own modules is not a step up.
    if target.startswith(importer + "."):
        return False
    return layer(target) > layer(importer)


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _package_edges(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """A package's __init__ importing its own modules is how a package works, not a circle."""
    return {m: {t for t in ts if not t.startswith(m + ".") and not m.startswith(t + ".")}
            for m, ts in graph.items()}


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else Path(__file__).resolve().parent.parent
    graph = import_graph(root)
    loops = circles(_package_edges(graph))
    upward = upward_imports(graph)
    for loop in loops:
        print("circle: " + " <-> ".join(loop))
    for edge in upward:
        print("upward: " + edge)
    print(f"{len(loops)} circles, {len(upward)} upward imports, {len(graph)} modules")
    return 1 if loops or upward else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
