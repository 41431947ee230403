"""The import contract: which package of kalends may import which.

Edges (the HTTP API, the CLI, the web panel) reach storage only through
``kalends.bootstrap``; domains never import an edge; the civil engine depends on
nothing of kalends but its errors; a domain reaches another only through that domain's
package (its public names), and only along :data:`DOMAIN_DEPENDENCIES`. Every import
counts, at module level or inside a function, under ``TYPE_CHECKING`` or not.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[2] / "src"
PACKAGE = SOURCE / "kalends"

EDGES = ("kalends.api", "kalends.cli", "kalends.web")
DOMAINS = (
    "kalends.identity",
    "kalends.tasks",
    "kalends.missions",
    "kalends.reminders",
    "kalends.auth",
    "kalends.civil",
    "kalends.storage",
    "kalends.feeds",
    "kalends.conversations",
    "kalends.questions",
    "kalends.supervision",
)

# Which domain may use which other domain (through its package only). Identity is who
# someone is and what role they hold; the task store writes its reminders' intents
# through the reminders, which know no task store; a mission's run privilege is an
# account's grant; a passage's checklist is tasks in its workspace's list, and its
# transcript a conversation of its workspace; its open questions hold its settlement.
DOMAIN_DEPENDENCIES = {
    "kalends.identity": (),
    "kalends.tasks": ("kalends.identity", "kalends.reminders"),
    "kalends.reminders": ("kalends.identity",),
    "kalends.missions": (
        "kalends.identity",
        "kalends.auth",
        "kalends.tasks",
        "kalends.conversations",
        "kalends.questions",
    ),
    "kalends.auth": ("kalends.identity",),
    # A calendar feed shows the tasks and passages its owner may see; its secret is kept
    # as the API tokens' are.
    "kalends.feeds": ("kalends.identity", "kalends.tasks", "kalends.missions", "kalends.auth"),
    # A conversation lives in a workspace and is read by its members' roles; it writes
    # its instants as the rest of the JSON interface does.
    "kalends.conversations": ("kalends.identity", "kalends.auth"),
    # A question lives in a workspace and is read by its members' roles; its answer
    # tokens are kept as the API tokens' are.
    "kalends.questions": ("kalends.identity", "kalends.auth"),
    # Service supervision keeps its preference in the store and knows no domain; a Play
    # reaches it only through the hook the composition root wires into the missions.
    "kalends.supervision": (),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Import:
    """One import statement: the module that holds it, the line, the module it names."""

    importer: str
    line: int
    imported: str

    def __str__(self) -> str:
        return f"{self.importer}:{self.line} imports {self.imported}"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SOURCE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_statements(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement of ``tree``, at any depth."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node


def imported_modules(
    node: ast.Import | ast.ImportFrom, importer: str, is_package: bool
) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    else:
        if node.level:
            anchor = importer.split(".")
            keep = len(anchor) - node.level + (1 if is_package else 0)
            base = ".".join(anchor[:keep])
            target = f"{base}.{node.module}" if node.module else base
        else:
            target = node.module or ""
        yield target
        # ``from kalends import storage`` names a module through its parent.
        yield from (f"{target}.{alias.name}" for alias in node.names)


def all_imports() -> list[Import]:
    found: list[Import] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        importer = module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in import_statements(tree):
            for imported in imported_modules(node, importer, path.name == "__init__.py"):
                if within(imported, ("kalends",)):
                    found.append(Import(importer=importer, line=node.lineno, imported=imported))
    return found


def within(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == package or module.startswith(f"{package}.") for package in packages)


IMPORTS = all_imports()


def breaches(importers: tuple[str, ...], forbidden: tuple[str, ...]) -> list[str]:
    seen: dict[tuple[str, int], str] = {}
    for found in IMPORTS:
        if within(found.importer, importers) and within(found.imported, forbidden):
            seen.setdefault((found.importer, found.line), str(found))
    return list(seen.values())


def test_the_walk_sees_the_whole_package() -> None:
    importers = {found.importer for found in IMPORTS}
    assert "kalends.bootstrap" in importers
    assert any(within(name, ("kalends.api",)) for name in importers)
    assert any(within(name, ("kalends.cli",)) for name in importers)


def test_edges_reach_storage_only_through_bootstrap() -> None:
    assert breaches(EDGES, ("kalends.storage",)) == []


@pytest.mark.parametrize("domain", DOMAINS)
def test_a_domain_never_imports_an_edge(domain: str) -> None:
    assert breaches((domain,), EDGES) == []


# What the lower layers may use of kalends (besides its version): the store knows no
# domain, and identity knows the store and nothing of the domains that use it.
LAYERS = {
    "kalends.storage": ("kalends.storage", "kalends.errors", "kalends.clock", "kalends.config"),
    "kalends.identity": ("kalends.identity", "kalends.storage", "kalends.errors"),
}


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_a_lower_layer_imports_only_what_is_below_it(layer: str) -> None:
    found = [
        str(found)
        for found in IMPORTS
        if within(found.importer, (layer,))
        and not within(found.imported, LAYERS[layer])
        and found.imported not in ("kalends", "kalends.__version__")
    ]
    assert found == []


def test_the_civil_engine_imports_nothing_of_kalends_but_errors() -> None:
    found = [
        str(found)
        for found in IMPORTS
        if within(found.importer, ("kalends.civil",))
        and not within(found.imported, ("kalends.civil", "kalends.errors"))
    ]
    assert found == []


def is_module(name: str) -> bool:
    """Whether ``name`` is a module or package of kalends (not a name inside one)."""
    path = SOURCE.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def cross_domain_breaches(domain: str) -> list[str]:
    """Imports of another domain by ``domain`` that the table does not allow, or that
    reach past the other domain's package into its modules."""
    allowed = DOMAIN_DEPENDENCIES[domain]
    others = tuple(other for other in DOMAIN_DEPENDENCIES if other != domain)
    found: dict[tuple[str, int], str] = {}
    for imported in IMPORTS:
        if not within(imported.importer, (domain,)) or not is_module(imported.imported):
            continue
        if within(imported.imported, others) and imported.imported not in allowed:
            found.setdefault((imported.importer, imported.line), str(imported))
    return list(found.values())


@pytest.mark.parametrize("domain", sorted(DOMAIN_DEPENDENCIES))
def test_a_domain_uses_another_only_through_its_package_and_as_the_table_allows(
    domain: str,
) -> None:
    assert cross_domain_breaches(domain) == []


def test_the_domain_table_would_catch_a_reach_into_another_domains_module() -> None:
    reach = Import(importer="kalends.missions.service", line=1, imported="kalends.tasks.access")
    IMPORTS.append(reach)
    try:
        assert cross_domain_breaches("kalends.missions") == [str(reach)]
    finally:
        IMPORTS.remove(reach)


def test_identity_depends_on_no_other_domain() -> None:
    assert DOMAIN_DEPENDENCIES["kalends.identity"] == ()
    assert breaches(("kalends.identity",), tuple(DOMAIN_DEPENDENCIES)[1:]) == []


class TestTheWalk:
    """The walk itself: what it counts as an import."""

    def test_an_import_inside_a_function_counts(self) -> None:
        tree = ast.parse("def f():\n    from kalends.storage.meta import read_meta\n")
        names = [
            name
            for node in import_statements(tree)
            for name in imported_modules(node, "kalends.cli.serve", is_package=False)
        ]
        assert "kalends.storage.meta" in names

    def test_a_relative_import_resolves_against_its_package(self) -> None:
        tree = ast.parse("from ..storage import meta\n")
        names = [
            name
            for node in import_statements(tree)
            for name in imported_modules(node, "kalends.cli.serve", is_package=False)
        ]
        assert names == ["kalends.storage", "kalends.storage.meta"]

    def test_importing_a_module_through_its_parent_counts(self) -> None:
        tree = ast.parse("from kalends import storage\n")
        names = [
            name
            for node in import_statements(tree)
            for name in imported_modules(node, "kalends.cli.db", is_package=False)
        ]
        assert "kalends.storage" in names
