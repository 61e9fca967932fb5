"""The outputs the docs show are the outputs the code prints.

Convention, for the pages in `PAGES`: every ```python block of a page runs, in page order, in one
namespace per page (so a block may use what an earlier one defined). When the next fenced block
after a ```python block is a ```text block, it holds the python block's expected stdout; a
python block followed by anything else (prose only, or another kind of block) just has to run.
A python block right after the line ``<!-- docs-test: skip -->`` is not run.

Shown and printed outputs are compared token by token: text must match exactly (trailing spaces
and blank lines at the ends aside), numbers within a relative 1e-3 and an absolute 1e-9 (so a
sign of zero, the last digit of a platform-dependent residual or NumPy's spacing of an array do
not matter, but a changed tolerance, value or status does).
"""

from __future__ import annotations

import contextlib
import io
import math
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

PAGES = [
    "README.md",
    "docs/index.md",
    "docs/tutorials/solve-and-check.md",
    "docs/tutorials/drive-a-policy.md",
    "docs/how-to/solve-a-wide-market.md",
    "docs/how-to/keep-replans-predictable.md",
]

SKIP = "<!-- docs-test: skip -->"

_FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.M | re.S)
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def blocks(text: str) -> list[tuple[str, str, bool]]:
    """The fenced blocks of `text` in order: (language, body, whether a skip marker precedes it)."""
    found = []
    for match in _FENCE.finditer(text):
        before = text[: match.start()].rstrip().splitlines()
        skipped = bool(before) and before[-1].strip() == SKIP
        found.append((match.group("lang"), match.group("body"), skipped))
    return found


def examples(page: str) -> list[tuple[int, str, str | None]]:
    """(index, code, expected stdout or None) of every python block of `page` to run."""
    found = blocks((REPO / page).read_text(encoding="utf-8"))
    runs = []
    for k, (lang, body, skipped) in enumerate(found):
        if lang != "python" or skipped:
            continue
        expected = found[k + 1][1] if k + 1 < len(found) and found[k + 1][0] == "text" else None
        runs.append((k, body, expected))
    return runs


def _tokens(output: str) -> list[str | float]:
    """`output` as a list of text pieces (whitespace runs collapsed) and numbers."""
    tokens: list[str | float] = []
    for line in output.strip().splitlines():
        position = 0
        for match in _NUMBER.finditer(line):
            text = " ".join(line[position:match.start()].split())
            if text:
                tokens.append(text)
            tokens.append(float(match.group()))
            position = match.end()
        text = " ".join(line[position:].split())
        if text:
            tokens.append(text)
        tokens.append("\n")
    return tokens


def same_output(shown: str, printed: str) -> bool:
    a, b = _tokens(shown), _tokens(printed)
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if isinstance(x, float) and isinstance(y, float):
            if not math.isclose(x, y, rel_tol=1e-3, abs_tol=1e-9):
                return False
        elif x != y:
            return False
    return True


@pytest.mark.parametrize("page", PAGES)
def test_page_examples_print_what_the_page_shows(page: str) -> None:
    runs = examples(page)
    assert runs, f"{page} has no python block to run"
    namespace: dict[str, object] = {"__name__": "__docs__"}
    for index, code, expected in runs:
        stdout = io.StringIO()
        with contextlib.redirect_stdout(stdout):
            exec(compile(code, f"{page} (block {index})", "exec"), namespace)
        if expected is not None:
            printed = stdout.getvalue()
            assert same_output(expected, printed), (
                f"{page}, block {index}: the output shown is stale.\n--- shown:\n{expected}\n--- printed:\n{printed}")


def test_comparison_catches_stale_outputs() -> None:
    printed = "price_complementarity     0.000e+00  (tol 1.0e-05) at (0, 0)  ok\n"
    assert same_output("price_complementarity     -0.000e+00  (tol 1.0e-05) at (0, 0)  ok", printed)
    assert not same_output("price_complementarity     2.617e-09  (tol 1.0e-06) at (0, 0)  ok", printed)
    assert not same_output("price_complementarity     0.000e+00  (tol 1.0e-05) at (0, 0)  VIOLATED", printed)
    assert not same_output("[1. 0.]", "[1. 0.]\n[0. 1.]")
    assert same_output("[ 1. 10.]", "[ 1.  10.]")


def test_skip_marker_and_expected_blocks_are_read() -> None:
    text = "```python\nprint(1)\n```\n\n```text\n1\n```\n\n<!-- docs-test: skip -->\n```python\nboom\n```\n"
    assert [(lang, skipped) for lang, _, skipped in blocks(text)] == [("python", False), ("text", False),
                                                                     ("python", True)]
