"""The README's code blocks, and a runner that executes its Python and SQL examples as printed.

``blocks(path)``: every fenced block, with its language, first line and line number. ``python -m
support.readme WORK BLOCK_LINE...`` (tests/spark/test_readme.py runs it in a fresh process, as a
user would) executes the blocks starting at those lines, in order, in one namespace: Python blocks
as they are, SQL blocks statement by statement through the ``db`` the Python blocks made. The
only change to what is printed: the README's example directories (``/tmp/wh``, ``/data/``) are
under WORK (``s3://lake`` is the bucket of the tests' S3 server, whose variables the caller sets). A Python line that is an expression followed by ``# <literal>`` states its result:
the runner checks it. Prints one JSON line per block: its line and what it checked."""

from __future__ import annotations

import ast
import json
import os
import re
import sys
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README = os.path.join(ROOT, "README.md")


@dataclass(frozen=True)
class Block:
    line: int  # of the opening fence
    lang: str
    text: str

    @property
    def first(self) -> str:
        return self.text.splitlines()[0] if self.text else ""


def blocks(path: str = README) -> list[Block]:
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    out, i = [], 0
    while i < len(lines):
        m = re.match(r"^```(\w*)\s*$", lines[i])
        if m:
            j = i + 1
            while not lines[j].startswith("```"):
                j += 1
            out.append(Block(i + 1, m.group(1), "\n".join(lines[i + 1 : j])))
            i = j
        i += 1
    return out


_CONTINUES = re.compile(r"^(\s|WHEN\b|ON\b|USING\b|AND\b|OR\b)")


def _strip_comment(line: str) -> str:
    quoted = False
    for k, ch in enumerate(line):
        if ch == "'":
            quoted = not quoted
        elif not quoted and line.startswith("--", k):
            return line[:k].rstrip()
    return line.rstrip()


def statements(sql: str) -> list[str]:
    """One statement per line, a line that starts with WHEN / ON / USING or blanks continuing the
    one above; ``--`` comments and a trailing ``;`` dropped."""
    out: list[str] = []
    for raw in sql.splitlines():
        line = _strip_comment(raw)
        if not line.strip():
            continue
        if out and _CONTINUES.match(line):
            out[-1] += "\n" + line
        else:
            out.append(line)
    return [s.strip().rstrip(";") for s in out]


def _localise(text: str, work: str) -> str:
    wh = os.path.join(work, "wh")
    return text.replace('"/tmp/wh"', json.dumps(wh)).replace('"/tmp/wh/', f'"{wh}/').replace("/data/", f"{work}/data/")


def _checks(source: str) -> list[tuple[int, str]]:
    """(line, literal) of each expression line that states its result in a comment."""
    found = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.Expr) and node.end_lineno == node.lineno:
            line = source.splitlines()[node.lineno - 1]
            m = re.search(r"#\s*(.+)$", line[node.end_col_offset :])
            if m:
                try:
                    ast.literal_eval(m.group(1).strip())
                except (ValueError, SyntaxError):
                    continue
                found.append((node.lineno, m.group(1).strip()))
    return found


def run(work: str, lines: list[int]) -> None:
    wanted = {b.line: b for b in blocks()}
    namespace: dict = {"__name__": "__readme__"}
    os.makedirs(os.path.join(work, "data"), exist_ok=True)
    for at in lines:
        block = wanted[at]
        text = _localise(block.text, work)
        checked: list[str] = []
        if block.lang == "python":
            stated = dict(_checks(text))
            tree = ast.parse(text)
            for node in tree.body:
                code = compile(ast.Module(body=[node], type_ignores=[]), f"README.md:{at}", "exec")
                if node.lineno in stated and isinstance(node, ast.Expr):
                    value = eval(compile(ast.Expression(node.value), f"README.md:{at}", "eval"), namespace)
                    expected = ast.literal_eval(stated[node.lineno])
                    assert value == expected, f"README.md:{at + node.lineno}: {value!r}, the README says {expected!r}"
                    checked.append(f"{ast.unparse(node.value)} == {expected!r}")
                else:
                    exec(code, namespace)
        else:
            db = namespace["db"]
            for statement in statements(text):
                out = db.sql(statement)
                if hasattr(out, "collect"):
                    out.collect()
                checked.append(statement.splitlines()[0])
        print(json.dumps({"block": at, "checked": checked}), flush=True)


if __name__ == "__main__":
    run(sys.argv[1], [int(a) for a in sys.argv[2:]])
