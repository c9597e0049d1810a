"""Directed graphs of names: strongly connected components (router cycles, and the import-cycle
check of the architecture test)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping


def strongly_connected(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Every strongly connected component of ``graph`` (node -> successors; a successor that is
    not a key has none), each sorted — Tarjan's algorithm, iterative (no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []

    def successors(node: str) -> Iterator[str]:
        return iter(sorted(graph.get(node, ())))

    for root in graph:
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, successors(root))]
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, successors(child)))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                found.append(sorted(component))
    return found
