"""A digest of the code that computes a cached quantity, for its cache key.

A reducer's output is cached under a key that names the reducer; when its code changes, results cached by the old
code must not be reused. A version number raised by hand is forgotten sooner or later, so the key carries a digest of
the code itself: the module that defines the reducer and, followed through their imports, the library's numerical
modules it reads (:data:`FOLLOWED`). Docstrings, comments and layout do not enter the digest (each module is read as
its syntax tree without docstrings), so rewording a docstring keeps every cached result; any change to what runs
gives a new digest.
"""

from __future__ import annotations

import ast
import hashlib
import sys
from functools import cache
from pathlib import Path

#: the parts of the library a reducer's code is followed into: the numerical code a reducer can call. The rest (the
#: verdicts, the pages, the build) reads what a reducer returns and cannot change it.
FOLLOWED = ("sinkframes.metrics", "sinkframes.tensors", "sinkframes.types", "sinkframes.threads")
PACKAGE = "sinkframes"
ROOT = Path(__file__).resolve().parent


def module_path(module: str) -> Path:
    """The source file of a module of the package (a subpackage's ``__init__.py``)."""
    rel = Path(*module.split(".")[1:])
    path = ROOT / rel
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def _followed(module: str) -> bool:
    return any(module == f or module.startswith(f + ".") for f in FOLLOWED)


def _absolute(module: str, node: ast.ImportFrom) -> str:
    """The absolute module name an ``import from`` in ``module`` names (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    package = module.split(".")
    base = package[: len(package) - node.level] if module_path(module).name != "__init__.py" else \
        package[: len(package) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def imported_modules(module: str, tree: ast.Module) -> set[str]:
    """The package's modules that ``tree`` (the source of ``module``) imports, at any depth of its code: ``from .x
    import y`` names ``x`` and, when ``y`` is a module of ``x``, ``x.y`` as well."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith(PACKAGE))
        elif isinstance(node, ast.ImportFrom):
            target = _absolute(module, node)
            if not target.startswith(PACKAGE):
                continue
            found.add(target)
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if module_path(sub).exists():
                    found.add(sub)
    return {m for m in found if module_path(m).exists()}


def _without_docstrings(tree: ast.Module) -> ast.Module:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return tree


@cache
def _module_code(module: str) -> tuple[str, frozenset[str]]:
    """``(the module's syntax tree without docstrings, dumped; the followed modules it imports)``."""
    tree = ast.parse(module_path(module).read_text(), filename=str(module_path(module)))
    imports = frozenset(m for m in imported_modules(module, tree) if _followed(m))
    return ast.dump(_without_docstrings(tree), include_attributes=False), imports


def modules_read(module: str) -> list[str]:
    """``module`` and every followed module it reaches through imports, sorted."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        todo.extend(_module_code(m)[1] - seen)
    return sorted(seen)


def code_digest(module: str) -> str:
    """Twelve hex digits of the sha256 of ``module``'s code and of every followed module it reads."""
    h = hashlib.sha256()
    for m in modules_read(module):
        h.update(m.encode() + b"\0" + _module_code(m)[0].encode() + b"\0")
    return h.hexdigest()[:12]


def reducer_version(cls: type) -> str:
    """The version a reducer class puts in its cache key: the digest of the module that defines it (with what it
    reads). A class defined outside the package (a test's, a user's) is versioned by its module's file as well."""
    module = cls.__module__
    if module.split(".")[0] == PACKAGE:
        return code_digest(module)
    source = getattr(sys.modules.get(module), "__file__", None)
    if source is None:
        raise ValueError(f"{cls.__name__}: no source file for module {module} to version the reducer by")
    return hashlib.sha256(Path(source).read_bytes()).hexdigest()[:12]
