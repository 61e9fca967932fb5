"""Griffe extension: turn reST math in docstrings into pymdownx.arithmatex delimiters.

``:math:`x``` becomes ``\\(x\\)``; a ``.. math:: expr`` line or a ``.. math::`` directive
followed by an indented block becomes a ``\\[ ... \\]`` display block.
"""

from __future__ import annotations

import re
import textwrap
from typing import Any

import griffe

_ROLE = re.compile(r":math:`([^`]+)`")


def _convert(text: str) -> str:
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.lstrip()
        if stripped.startswith(".. math::"):
            indent = line[: len(line) - len(stripped)]
            inline = stripped[len(".. math::"):].strip()
            body: list[str] = [inline] if inline else []
            i += 1
            if not inline:
                while i < len(lines) and not lines[i].strip():
                    i += 1
                block: list[str] = []
                while i < len(lines) and (not lines[i].strip() or
                                          len(lines[i]) - len(lines[i].lstrip()) > len(indent)):
                    block.append(lines[i])
                    i += 1
                while block and not block[-1].strip():
                    block.pop()
                body = textwrap.dedent("\n".join(block)).split("\n")
            out.extend(["", indent + "\\[", *(indent + b for b in body), indent + "\\]", ""])
            continue
        out.append(_ROLE.sub(lambda m: "\\(" + m.group(1) + "\\)", line))
        i += 1
    return "\n".join(out)


class RstMath(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _convert(obj.docstring.value)
