"""The code-size targets of issue #37, measured with ``ast``: no function over 80 lines and at
most 10 over 60 in app/ and models/; no module in app/ over 500 lines.

A function's length is its lines from ``def`` (decorators excluded) to its last line, docstring
and comments included (``end_lineno - lineno + 1``); a nested function counts inside its
parent and on its own. A module's length is its number of lines.

    python scripts/code_size.py              # the report; exit status 1 when a target is missed
    python scripts/code_size.py --over 40    # list every function over 40 lines
    python scripts/code_size.py --skip app/offline.py   # leave files out (repeatable)
"""

from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("app", "models")
FUNCTION_MAX = 80  # no function over this
FUNCTION_LONG = 60  # at most LONG_ALLOWED functions over this
LONG_ALLOWED = 10
MODULE_MAX = 500  # no module in app/ over this


@dataclass(frozen=True)
class Function:
    path: str
    name: str  # qualified: Class.method, outer.inner
    line: int
    length: int


def functions(path: Path, relative: str) -> list[Function]:
    """Every function and method of the module at ``path`` with its length."""
    tree = ast.parse(path.read_text(), filename=str(path))
    out: list[Function] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                assert child.end_lineno is not None
                out.append(Function(relative, name, child.lineno,
                                    child.end_lineno - child.lineno + 1))
                visit(child, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return out


def sources(skip: set[str]) -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py")
                  if str(p.relative_to(ROOT)) not in skip)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--over", type=int, default=FUNCTION_LONG,
                        help="list the functions over this many lines (default: %(default)s)")
    parser.add_argument("--skip", action="append", default=[],
                        help="a file to leave out, relative to the repository (repeatable)")
    args = parser.parse_args(argv)
    found: list[Function] = []
    big_modules: list[tuple[str, int]] = []
    for path in sources(set(args.skip)):
        relative = str(path.relative_to(ROOT))
        found += functions(path, relative)
        n_lines = len(path.read_text().splitlines())
        if relative.startswith("app/") and n_lines > MODULE_MAX:
            big_modules.append((relative, n_lines))
    listed = sorted((f for f in found if f.length > args.over), key=lambda f: -f.length)
    for f in listed:
        print(f"{f.length:4d}  {f.path}:{f.line}  {f.name}")
    too_long = [f for f in found if f.length > FUNCTION_MAX]
    long_ = [f for f in found if f.length > FUNCTION_LONG]
    for relative, n_lines in sorted(big_modules, key=lambda m: -m[1]):
        print(f"module {relative}: {n_lines} lines")
    print(f"{len(found)} functions; over {FUNCTION_MAX} lines: {len(too_long)} (target 0); "
          f"over {FUNCTION_LONG}: {len(long_)} (target at most {LONG_ALLOWED}); modules in app/ "
          f"over {MODULE_MAX} lines: {len(big_modules)} (target 0)")
    missed = too_long or len(long_) > LONG_ALLOWED or big_modules
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
