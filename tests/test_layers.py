"""The package's modules form no import cycle (issue 19).

The import graph is grimp's (the library under import-linter, whose `layers` contract in pyproject.toml
states which layer may import which; `lint-imports` checks it). grimp counts every import, also one
inside a function body, so a cycle hidden behind a lazy import is one here too. Ignored, because they
are how packages work and not a dependency between two pieces of code: a package's `__init__`
importing its own submodules, and a module importing an ancestor package (`from .. import X`)."""

from __future__ import annotations

import pytest

grimp = pytest.importorskip("grimp")


def _is_ancestor(pkg: str, mod: str) -> bool:
    return mod.startswith(pkg + ".")


def _edges(graph) -> dict[str, list[str]]:
    out = {}
    for m in sorted(graph.modules):
        out[m] = sorted(t for t in graph.find_modules_directly_imported_by(m)
                        if not _is_ancestor(m, t) and not _is_ancestor(t, m))
    return out


def find_cycles(edges: dict[str, list[str]]) -> list[list[str]]:
    """One cycle (as a path a → … → a) per back edge of a depth-first search; [] when there is none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []
    cycles: list[list[str]] = []

    def visit(m: str) -> None:
        state[m] = 1
        path.append(m)
        for t in edges.get(m, ()):
            if state.get(t) == 1:
                cycles.append(path[path.index(t):] + [t])
            elif t not in state:
                visit(t)
        path.pop()
        state[m] = 2

    for m in sorted(edges):
        if m not in state:
            visit(m)
    return cycles


def test_cycle_finder_finds_a_cycle_and_its_path():
    edges = {"p.a": ["p.b"], "p.b": ["p.c"], "p.c": ["p.a", "p.d"], "p.d": []}
    assert find_cycles(edges) == [["p.a", "p.b", "p.c", "p.a"]]
    assert find_cycles({"p.a": ["p.b"], "p.b": ["p.c"], "p.c": []}) == []


def test_package_edges_are_ignored():
    assert not _is_ancestor("ibverify.runner", "ibverify.runner")
    assert _is_ancestor("ibverify.runner", "ibverify.runner.claim")
    assert not _is_ancestor("ibverify.run", "ibverify.runner.claim")


def test_no_import_cycle_between_modules():
    graph = grimp.build_graph("ibverify", include_external_packages=False)
    cycles = find_cycles(_edges(graph))
    assert not cycles, "import cycles in ibverify:\n" + "\n".join(" → ".join(c) for c in cycles)
