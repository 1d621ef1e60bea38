"""The code blocks of the guides, as the tests run them.

A block is a fenced code block of README.md, ARCHITECTURE.md, CHANGELOG.md or a page under docs/ (indented fences
inside list items included). The line right above its fence may say how the test treats it, in an HTML comment the
rendered page does not show:

    <!-- docs-test: skip (why it must not run here) -->     e.g. `make test`, production installs
    <!-- docs-test: expect "text" -->                        what the block must print
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GENERATED = {ROOT / "docs" / "results.md"}
FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w-]*)[ \t]*$")
NOTE = re.compile(r"^\s*<!-- docs-test: (?P<note>.*?) -->\s*$")
SKIP = re.compile(r"^skip \((?P<reason>.+)\)$")
EXPECT = re.compile(r'^expect "(?P<text>.+)"$')


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    lang: str
    body: str
    note: str

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}:{self.lang or 'plain'}"

    @property
    def skip_reason(self) -> str | None:
        match = SKIP.match(self.note)
        return match["reason"] if match else None

    @property
    def expected(self) -> str | None:
        match = EXPECT.match(self.note)
        return match["text"] if match else None


def guide_files() -> list[Path]:
    pages = sorted(path for path in (ROOT / "docs").rglob("*.md") if path not in GENERATED)
    return [ROOT / "README.md", ROOT / "ARCHITECTURE.md", ROOT / "CHANGELOG.md", *pages]


def blocks_of(path: Path) -> list[Block]:
    lines, found, index = path.read_text().splitlines(), [], 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        closing = _closing_line(lines, index, opening["indent"])
        note = NOTE.match(lines[index - 1]) if index else None
        body = textwrap.dedent("\n".join(lines[index + 1:closing]))
        found.append(Block(path, index + 1, opening["lang"], body + "\n", note["note"] if note else ""))
        index = closing + 1
    return found


def _closing_line(lines: list[str], opening: int, indent: str) -> int:
    for index in range(opening + 1, len(lines)):
        if lines[index].rstrip() == f"{indent}```":
            return index
    raise AssertionError(f"a code block opened at line {opening + 1} is never closed")


def all_blocks() -> list[Block]:
    return [block for path in guide_files() for block in blocks_of(path)]
