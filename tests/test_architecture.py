"""polyrag's imports form no loop: no module imports itself through other modules, and no two
packages (the first folder under ``polyrag/``; a top-level module is a node of its own) import
each other, directly or around a longer loop. Every ``import polyrag.x`` and ``from polyrag.x
import y`` counts, inside functions too (a lazy import still ties the two packages together);
importing ``polyrag.x.y`` counts as importing ``polyrag/x/__init__.py`` too, which runs first. The
registry's ``"module:Class"`` strings are not imports."""

from __future__ import annotations

import ast
from collections import defaultdict, deque
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class Import:
    source: str  # the importing module, "polyrag.llm.mock"
    target: str  # the imported module, "polyrag.answer_parsing" (or a package's __init__: "polyrag.llm")
    where: str  # "polyrag/llm/mock.py:32"


def modules(root: Path) -> dict[str, Path]:
    """Every module of the package at ``root`` by dotted name (a package by its own name)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(root: Path) -> list[Import]:
    """Every import of one module of the package by another (none of a module by itself)."""
    package, known = root.name, modules(root)
    found = []
    for source, path in known.items():
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                named = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                # "from polyrag.llm import client" imports the module polyrag.llm.client
                named = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
            else:
                continue
            targets = set()
            for name in named:
                parts = name.split(".")
                if parts[0] != package:
                    continue
                # the module itself and the packages above it, whose __init__ runs first, less the
                # packages of the importer (already initialised) and names that are no module
                targets |= {target for target in (".".join(parts[:depth]) for depth in range(2, len(parts) + 1))
                            if target in known and target != source and not source.startswith(target + ".")}
            where = f"{path.relative_to(root.parent).as_posix()}:{node.lineno}"
            found += [Import(source, target, where) for target in sorted(targets)]
    return found


def package_of(module: str, root: Path) -> str:
    """The node of a module in the package graph: its folder under the root (``generate/``), or the
    top-level module itself (``text.py``)."""
    first = module.split(".")[1]
    return f"{first}/" if (root / first).is_dir() else f"{first}.py"


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Cycles of a directed graph, one per edge that lies on one (the shortest through it, from its
    head back to its tail), each once, shortest first: empty when the graph has no cycle."""
    nodes = sorted(set(edges) | {b for targets in edges.values() for b in targets})
    index, low, on_stack, stack, components = {}, {}, set(), [], []

    def strongly_connect(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                strongly_connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            components.append(component)

    for node in nodes:
        if node not in index:
            strongly_connect(node)
    found = {}
    for component in components:
        for tail in sorted(component):
            for head in sorted(edges.get(tail, set()) & component):
                previous, queue = {head: None}, deque([head])  # the shortest way back from head to tail
                while queue and tail not in previous:
                    node = queue.popleft()
                    for target in sorted(edges.get(node, set()) & component):
                        if target not in previous:
                            previous[target] = node
                            queue.append(target)
                path, node = [], tail
                while node is not None:
                    path.append(node)
                    node = previous[node]
                loop = [tail, *reversed(path)][:-1]  # tail -> head -> ... -> tail, the tail once
                start = loop.index(min(loop))
                found.setdefault(tuple(loop[start:] + loop[:start]), None)
    return sorted(([*loop, loop[0]] for loop in found), key=lambda loop: (len(loop), loop))


def report(loops: list[list[str]], evidence: dict[tuple[str, str], dict[str, str]], what: str) -> str:
    """Each cycle, then under each of its edges the lines that make it: ``file:line imports module``."""
    lines = [f"{len(loops)} import cycle(s) of {what}:"]
    for loop in loops:
        lines.append("  " + " -> ".join(loop))
        for a, b in zip(loop, loop[1:]):
            lines.append(f"    {a} -> {b}: " + ", ".join(f"{where} imports {target}"
                                                       for where, target in evidence[a, b].items()))
    return "\n".join(lines)


def module_cycles(root: Path) -> str:
    edges, evidence = defaultdict(set), defaultdict(dict)
    for found in imports(root):
        edges[found.source].add(found.target)
        evidence[found.source, found.target][found.where] = found.target
    loops = cycles(edges)
    return report(loops, evidence, "modules") if loops else ""


def package_cycles(root: Path) -> str:
    edges, evidence = defaultdict(set), defaultdict(dict)
    for found in imports(root):
        a, b = package_of(found.source, root), package_of(found.target, root)
        if a != b:
            edges[a].add(b)  # a line's deepest module names it: polyrag.llm.client, not polyrag.llm
            evidence[a, b][found.where] = max(evidence[a, b].get(found.where, ""), found.target, key=len)
    loops = cycles(edges)
    return report(loops, evidence, f"packages of {root.name}/") if loops else ""


def test_no_module_imports_itself_through_others(repo):
    if problem := module_cycles(repo / "polyrag"):
        pytest.fail(problem, pytrace=False)


def test_no_two_packages_import_each_other(repo):
    if problem := package_cycles(repo / "polyrag"):
        pytest.fail(problem, pytrace=False)


def test_the_check_sees_imports_inside_functions_and_from_a_package(tmp_path):
    """A loop of three packages closed by an import inside a function, and a loop of two modules
    through ``from package import module``: both found, with the lines that close them."""
    root = tmp_path / "pkg"
    files = {"__init__.py": "",
             "a/__init__.py": "", "a/one.py": "import pkg.b.two\n",
             "b/__init__.py": "", "b/two.py": "from pkg.c.three import f\n",
             "c/__init__.py": "", "c/three.py": "import os\n\n\ndef f():\n    from pkg.a import one\n",
             "top.py": "import pkg.a.one\n"}
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    assert module_cycles(root).splitlines()[:2] == ["1 import cycle(s) of modules:",
                                                    "  pkg.a.one -> pkg.b.two -> pkg.c.three -> pkg.a.one"]
    problem = package_cycles(root)
    assert "  a/ -> b/ -> c/ -> a/" in problem and "pkg/c/three.py:5 imports pkg.a.one" in problem
    assert "top.py" not in problem
    (root / "c/three.py").write_text("def f():\n    return 1\n")
    assert module_cycles(root) == package_cycles(root) == ""
