"""The package's import contract: each layer imports only the layers below it.

Read from the source (``ast``), so it holds for every import, run or not:
module level, inside functions and under ``TYPE_CHECKING``. Each layer's
``__init__`` docstring says in words what it may import; this test holds the
words to the code, and the code to the contract.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import ROOT

PACKAGE = ROOT / "ghostrun"

# Lowest first. A layer may import the layers listed for it, and its own modules.
CONTRACT: dict[str, tuple[str, ...]] = {
    "_core": (),
    "_wire": ("_core",),
    "_secrets": ("_core", "_wire"),
    "_store": ("_core", "_wire", "_secrets"),
    "_recording": ("_core", "_wire", "_secrets", "_store"),
    "_intercept": ("_core", "_wire", "_secrets", "_store", "_recording"),
    "_judging": ("_core", "_wire", "_secrets", "_store", "_recording"),
    "_assertions": ("_core", "_wire", "_secrets", "_store", "_recording", "_judging"),
    "_tools": (  # _intercept: ``ghostrun doctor`` surveys the roads
        "_core",
        "_wire",
        "_secrets",
        "_store",
        "_recording",
        "_intercept",
        "_judging",
        "_assertions",
    ),
    "_integrations": (
        "_core",
        "_wire",
        "_secrets",
        "_store",
        "_recording",
        "_intercept",
        "_judging",
        "_assertions",
    ),
}
# Public modules at the top: where each belongs. ``ghostrun`` itself may import anything.
TOP_MODULES = {"ghostrun.pytest_plugin": "_integrations", "ghostrun.__main__": "_tools"}

# Imports inside a function: only these, each lazy for a reason its module documents.
LAZY_IMPORTS = {
    ("ghostrun._assertions._expect", "ghostrun._judging._verdicts"): "a judged check only",
    ("ghostrun._assertions._expect", "ghostrun._judging._calibration._summary"): (
        "a judged failure only"
    ),
    # Wired before the first session, not by ``import ghostrun`` (``_recording._wiring``).
    ("ghostrun", "ghostrun._intercept._at_exit"): "the first session only",
    ("ghostrun", "ghostrun._intercept._guard"): "the first session only",
    ("ghostrun", "ghostrun._intercept._patch"): "the first session only",
    ("ghostrun", "ghostrun._recording._deck"): "the first session only",
    ("ghostrun", "ghostrun._recording._runlog"): "the first session only",
    # The pytest plugin's start-up imports its options only (``_load``).
    **{
        ("ghostrun.pytest_plugin", f"ghostrun.{module}"): "the first test using ghostrun"
        for module in (
            "_core._config",
            "_core._exceptions",
            "_intercept._guard",
            "_intercept._patch",
            "_recording._runlog",
            "_recording._stale",
            "_recording._trajectory",
            "_recording._session",
        )
    },
}


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = _modules()


Import = tuple[str, bool, bool]


def _imports(name: str) -> Iterator[Import]:
    """(imported ghostrun module, inside a function?, under TYPE_CHECKING?) for each import."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def walk(
        node: ast.AST, in_function: bool, typing_only: bool
    ) -> Iterator[tuple[str, bool, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ImportFrom):
                for target in _targets(child, package):
                    yield target, in_function, typing_only
            elif isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name.startswith("ghostrun"):
                        yield _known(alias.name), in_function, typing_only
            function = isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            checking = isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test)
            yield from walk(child, in_function or function, typing_only or checking)

    yield from walk(ast.parse(path.read_text(encoding="utf-8")), False, False)


def _targets(node: ast.ImportFrom, package: str) -> Iterator[str]:
    if node.level:
        base = package.split(".")[: len(package.split(".")) - node.level + 1]
        module = ".".join([*base, node.module] if node.module else base)
    elif node.module and node.module.startswith("ghostrun"):
        module = node.module
    else:
        return
    for alias in node.names:
        full = f"{module}.{alias.name}"
        yield full if full in MODULES else _known(module)


def _known(module: str) -> str:
    assert module in MODULES, f"import of {module}, which does not exist"
    return module


def _layer(module: str) -> str | None:
    """The layer of a module; None for the public package ``ghostrun`` itself."""
    if module in TOP_MODULES:
        return TOP_MODULES[module]
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def test_every_module_belongs_to_a_layer() -> None:
    homeless = [m for m in MODULES if m != "ghostrun" and _layer(m) not in CONTRACT]
    assert not homeless, f"modules outside every layer of the contract: {homeless}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_go_down_the_layers(module: str) -> None:
    layer = _layer(module)
    if layer is None:
        return  # the public package wires the layers together
    allowed = {layer, *CONTRACT[layer]}
    wrong = sorted({t for t, _, _ in _imports(module) if _layer(t) not in allowed})
    assert not wrong, f"{module} (layer {layer}) imports {wrong}; it may import {sorted(allowed)}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_import_inside_a_function_but_the_documented_lazy_ones(module: str) -> None:
    late = sorted({t for t, inside, _ in _imports(module) if inside} - {"ghostrun"})
    unlisted = [t for t in late if (module, t) not in LAZY_IMPORTS]
    assert not unlisted, f"{module} imports {unlisted} inside a function: import at the top"


def test_the_lazy_imports_listed_are_all_still_made() -> None:
    made = {(m, t) for m in MODULES for t, inside, _ in _imports(m) if inside}
    assert set(LAZY_IMPORTS) <= made, set(LAZY_IMPORTS) - made


def test_no_import_cycles() -> None:
    graph = {m: {t for t, inside, typing in _imports(m) if not (inside or typing)} for m in MODULES}
    # A package's __init__ is imported before its modules: that edge is not a cycle.
    for module in graph:
        graph[module] -= {p for p in graph if module.startswith(p + ".")}
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        path.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                cycle = [*path[path.index(target) :], target]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if target not in state:
                visit(target)
        path.pop()
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)


@pytest.mark.parametrize("layer", sorted(CONTRACT))
def test_each_layer_says_what_it_may_import(layer: str) -> None:
    doc = ast.get_docstring(ast.parse((PACKAGE / layer / "__init__.py").read_text())) or ""
    found = re.search(r"^May import: (.+?)(?:\n\n|\Z)", doc, re.MULTILINE | re.DOTALL)
    assert found, f"ghostrun/{layer}/__init__.py: its docstring needs a 'May import: ...' line"
    said = {w.strip("`") for w in re.findall(r"`?_\w+`?", found.group(1))}
    assert said == set(CONTRACT[layer]), f"{layer} says {sorted(said)}, the contract says otherwise"
