"""No phrase lists outside the language seam (issue 33, item 1): a regex alternation or a word set of 8 or more English
words anywhere in product code fails, except inside `zeromem/language/`, where the old tables sit frozen as the
`rules` reader; and those frozen tables may only shrink.

What the tests read, with `ast` (no module is imported):
- *Patterns*: the pattern argument of every `re.compile/match/fullmatch/search/sub/subn/split/findall/finditer`
  call, with the names, f-string parts, `+` and `X.pattern` it is built from resolved to the module's string
  constants; and every string literal on its own (a pattern passed through a helper is still a literal somewhere).
  A pattern is parsed by Python's own regex parser (`re._parser`); every alternation in it (a BRANCH node) is
  walked, and each alternative that spells a word or phrase (and holds no alternation of its own) counts: its
  literals, letter classes (`[sz]`, `\\w`) and optional parts read once (`ok(?:ay)?` → "okay", `woo+hoo+` →
  "woohoo"), nothing else in it (a digit, `\\d`, `.`, a class of digits or punctuation makes it a format, not a
  word). A pattern's count is the sum over all its alternations, so one list cut into groups of seven still counts
  whole. (The parser moves a prefix common to all alternatives out of the branch and turns single-character
  alternatives into a class; the count is of what is left, which for lists of words is the same number.)
- *Word sets*: every set, frozenset, list or tuple literal counts its string elements that are English words or
  phrases (letters, with an inner space, apostrophe or hyphen); a dict literal counts its keys that are words when
  it maps them to constants (a lookup table, not a record of fields); a `word_set("...")` call or a `"...".split()`
  counts the words of its string.
Numbers, dates, money, URLs and versions are formats: they stay rules, and they count only when they are spelled as
words (month and weekday names count, and live in the language package like every other word table).
"""

from __future__ import annotations

import ast
import re
import re._constants as sre_constants
import re._parser as sre_parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
SCANNED = ("zeromem", "consolidation", "profiles")
LANGUAGE = ROOT / "zeromem" / "language"
# The frozen `rules` reader: its tables and its wrapper. The rest of the package (the seam's own readers) holds no
# frozen table; the first test's rule stops at the package, as the issue has it.
FROZEN = (LANGUAGE / "rules_tables", LANGUAGE / "rules.py")
EXEMPT = (ROOT / "zeromem" / "devtools", LANGUAGE)
MIN_WORDS = 8
# The frozen tables' words when they moved into the language package: lower it when a table shrinks or goes.
FROZEN_WORDS = 2982

# Closed sets of names that are no English judgement, each with the reason.
NOT_LANGUAGE = {
    ("zeromem/settings.py", "ZEROMEMORY_SEARCH_CONFIG"): "PostgreSQL's text-search configurations, a setting's choices",
}

PATTERN_FUNCTIONS = {"compile", "match", "fullmatch", "search", "sub", "subn", "split", "findall", "finditer"}
WORD = re.compile(r"[A-Za-z]+(?:['’ -][A-Za-z]+)*")
ANY_LETTER = "·"  # a class of letters in a spelled alternative: "[A-Z][a-z]+" is the shape of a name, not a word


@dataclass(frozen=True)
class Table:
    path: Path
    line: int
    kind: str  # "pattern" or "word set"
    words: int
    name: str  # what the statement assigns ("" for none)

    @property
    def where(self) -> tuple[str, str]:
        return str(self.path.relative_to(ROOT)), self.name

    def __str__(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}: {self.name or 'a'} {self.kind} of {self.words} words"


# --- patterns ----------------------------------------------------------------------------------------------------

def _spelled(items: list[tuple[object, object]]) -> str | None:
    """The text a regex alternative spells, its optional parts read once; None when it holds anything that is not
    a letter, a space, an apostrophe or a hyphen (a digit, `\\d`, `.`, a class of digits or punctuation)."""
    out = []
    for op, av in items:
        if op is sre_constants.LITERAL:
            out.append(chr(av))  # type: ignore[arg-type]
        elif op in (sre_constants.AT, sre_constants.ASSERT, sre_constants.ASSERT_NOT):
            continue  # \b, ^, $ and lookarounds match no text
        elif op is sre_constants.SUBPATTERN:
            inner = _spelled(list(av[-1]))  # type: ignore[index]
            if inner is None:
                return None
            out.append(inner)
        elif op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT, sre_constants.POSSESSIVE_REPEAT):
            inner = _spelled(list(av[-1]))  # type: ignore[index]
            if inner is None:
                return None
            out.append(inner if av[0] else "")  # type: ignore[index]
        elif op is sre_constants.BRANCH:
            inner = _spelled(list(av[1][0]))  # type: ignore[index]
            if inner is None:
                return None
            out.append(inner)
        elif op is sre_constants.IN:
            letter = _class_letter(av)  # type: ignore[arg-type]
            if letter is None:
                return None
            out.append(letter)
        else:
            return None
    return "".join(out)


def _class_letter(members: list[tuple[object, object]]) -> str | None:
    """A character class of letters ("[sz]", "[a-z]", "\\w") reads as ANY_LETTER, one of a space, an apostrophe or a
    hyphen as that character ("\\s" as a space); any other class is a format."""
    for op, av in members:
        if op is sre_constants.LITERAL and (chr(av).isalpha() or chr(av) in " '-’"):  # type: ignore[arg-type]
            continue
        if op is sre_constants.RANGE and all(chr(c).isalpha() for c in av):  # type: ignore[union-attr]
            continue
        if op is sre_constants.CATEGORY and av in (sre_constants.CATEGORY_WORD, sre_constants.CATEGORY_SPACE):
            continue
        return None
    if any(op is sre_constants.RANGE or av is sre_constants.CATEGORY_WORD
           or op is sre_constants.LITERAL and chr(av).isalpha() for op, av in members):  # type: ignore[arg-type]
        return ANY_LETTER
    op, av = members[0]
    return " " if op is sre_constants.CATEGORY else chr(av)  # type: ignore[arg-type]


def _branches(items: object) -> Iterator[list[list[tuple[object, object]]]]:
    """Every alternation of a parsed pattern, nested ones included."""
    for op, av in items:  # type: ignore[attr-defined]
        if op is sre_constants.BRANCH:
            yield av[1]
            for alternative in av[1]:
                yield from _branches(alternative)
        elif op in (sre_constants.SUBPATTERN, sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT,
                    sre_constants.POSSESSIVE_REPEAT, sre_constants.ASSERT, sre_constants.ASSERT_NOT):
            yield from _branches(av[-1])


def pattern_words(pattern: str) -> int:
    """How many alternatives of the pattern's alternations spell a word or a phrase (0 for a text no regex)."""
    if "|" not in pattern:
        return 0
    try:
        parsed = sre_parse.parse(pattern)
    except (re.error, OverflowError, RecursionError):
        return 0
    return sum(1 for branch in _branches(parsed) for alternative in branch
               if not any(True for _ in _branches(alternative)) and _is_word(_spelled(list(alternative))))


def _is_word(spelled: str | None) -> bool:
    """A word or phrase with at least one letter of its own ("speaking of [\\w'-]+" is; "[A-Z][a-z]+" is not)."""
    if spelled is None or not any(c.isalpha() for c in spelled.replace(ANY_LETTER, "")):
        return False
    return bool(WORD.fullmatch(spelled.strip().replace(ANY_LETTER, "x")))


class _Strings:
    """A module's string constants by name, and the string an expression builds from them ("" for a part it cannot
    tell)."""

    def __init__(self, tree: ast.Module) -> None:
        self.names: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                self._learn(node.targets[0].id, node.value)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                self._learn(node.target.id, node.value)

    def _learn(self, name: str, value: ast.expr) -> None:
        if isinstance(value, ast.Call) and _is_pattern_call(value) and value.args:
            value = value.args[0]  # NAME = re.compile(...): NAME.pattern is its pattern
        text = self.value(value)
        if text:
            self.names[name] = text

    def value(self, node: ast.expr) -> str:
        if isinstance(node, ast.Constant):
            return node.value if isinstance(node.value, str) else ""
        if isinstance(node, ast.JoinedStr):
            return "".join(self.value(part) for part in node.values)
        if isinstance(node, ast.FormattedValue):
            return self.value(node.value)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self.value(node.left) + self.value(node.right)
        if isinstance(node, ast.Name):
            return self.names.get(node.id, "")
        if isinstance(node, ast.Attribute) and node.attr == "pattern" and isinstance(node.value, ast.Name):
            return self.names.get(node.value.id, "")
        return ""


def _is_pattern_call(node: ast.Call) -> bool:
    function = node.func
    return (isinstance(function, ast.Attribute) and function.attr in PATTERN_FUNCTIONS
            and isinstance(function.value, ast.Name) and function.value.id == "re")


def _pattern_argument(node: ast.Call) -> ast.expr | None:
    if node.args:
        return node.args[0]
    return next((k.value for k in node.keywords if k.arg == "pattern"), None)


# --- word sets ---------------------------------------------------------------------------------------------------

def _is_word_constant(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and bool(WORD.fullmatch(node.value))


def _text_words(text: str) -> int:
    return sum(1 for w in text.split() if WORD.fullmatch(w))


def collection_words(node: ast.expr, strings: _Strings | None = None) -> int:
    """The English words a literal collection or a word-list call holds (0 for anything else)."""
    strings = strings or _Strings(ast.Module(body=[], type_ignores=[]))
    if isinstance(node, ast.Set | ast.List | ast.Tuple):
        return sum(1 for e in node.elts if _is_word_constant(e))
    if isinstance(node, ast.Dict):
        lookup = all(isinstance(v, ast.Constant) for v in node.values)
        return sum(1 for k in node.keys if _is_word_constant(k)) if lookup else 0
    if isinstance(node, ast.Call) and node.args and _called(node) == "word_set":
        return _text_words(strings.value(node.args[0]))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "split" \
            and not node.args:
        return _text_words(strings.value(node.func.value))
    return 0


def _called(node: ast.Call) -> str:
    function = node.func
    return function.id if isinstance(function, ast.Name) else function.attr if isinstance(function, ast.Attribute) \
        else ""


# --- scanning ----------------------------------------------------------------------------------------------------

def tables_in(path: Path) -> list[Table]:
    """Every pattern and word set of `path` holding MIN_WORDS words or more, once per statement (the largest)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    strings = _Strings(tree)
    found: dict[tuple[int, str], Table] = {}
    for statement in ast.walk(tree):
        if not isinstance(statement, ast.stmt):
            continue
        for kind, words in _tables_of(statement, strings):
            key = (statement.lineno, kind)
            total = words + (found[key].words if key in found else 0)
            found[key] = Table(path, statement.lineno, kind, total, _target(statement))
    return [found[key] for key in sorted(found)]


def _tables_of(statement: ast.stmt, strings: _Strings) -> Iterator[tuple[str, int]]:
    """The tables of a statement's expressions (not of the statements nested in it, a function's body), each
    once: the pattern of a `re.compile` call and its string literal are one table."""
    pending: list[tuple[ast.AST, frozenset[str]]] = [
        (child, frozenset()) for child in ast.iter_child_nodes(statement) if not isinstance(child, ast.stmt)]
    while pending:
        node, counted = pending.pop()
        if isinstance(node, ast.expr):
            for kind, words in _counts(node, strings):
                if words >= MIN_WORDS and kind not in counted:
                    counted |= {kind}
                    yield kind, words
        pending.extend((child, counted) for child in ast.iter_child_nodes(node) if not isinstance(child, ast.stmt))


def _counts(node: ast.expr, strings: _Strings) -> Iterator[tuple[str, int]]:
    yield "word set", collection_words(node, strings)
    if isinstance(node, ast.Call) and _is_pattern_call(node) and (argument := _pattern_argument(node)):
        yield "pattern", pattern_words(strings.value(argument))
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield "pattern", pattern_words(node.value)


def _target(statement: ast.stmt) -> str:
    if isinstance(statement, ast.Assign) and isinstance(statement.targets[0], ast.Name):
        return statement.targets[0].id
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
        return statement.target.id
    return ""


def product_files() -> Iterator[Path]:
    for app in SCANNED:
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path


def test_no_word_tables_outside_the_language_package() -> None:
    offenders = [table for path in product_files() if not any(path.is_relative_to(e) for e in EXEMPT)
                 for table in tables_in(path) if table.where not in NOT_LANGUAGE]
    assert not offenders, (f"{len(offenders)} word lists outside zeromem/language/ (a regex alternation or a word "
                           f"set of {MIN_WORDS}+ words; judge language through the seam instead):\n"
                           + "\n".join(map(str, offenders)))


def test_the_frozen_tables_only_shrink() -> None:
    frozen = sorted(path for place in FROZEN for path in ([place] if place.is_file() else place.rglob("*.py")))
    tables = [table for path in frozen for table in tables_in(path)]
    total = sum(table.words for table in tables)
    assert total <= FROZEN_WORDS, (f"the frozen tables of zeromem/language/ hold {total} words, more than the "
                                   f"{FROZEN_WORDS} they held when they moved there:\n" + "\n".join(map(str, tables)))


# --- the rules themselves ----------------------------------------------------------------------------------------

def test_an_alternation_of_words_counts_each_word_however_it_is_grouped() -> None:
    assert pattern_words(r"\b(?:monday|tuesday|wednesday|thursday)\b") == 4
    assert pattern_words(r"^(?:hey|hi|ok(?:ay)?|woo+hoo+)$|(?:thanks|thank you|gave up|i'm)") == 8
    assert pattern_words(r"(?:last (?:week|month)|today)") == 3  # "today", "week", "month"
    assert pattern_words(r"(?:so much|too|(?-i:[A-Z][a-z]+)|speaking of [\w'-]+)") == 3  # a name's shape is none


def test_an_alternation_of_formats_counts_no_words() -> None:
    assert pattern_words(r"p\d{2,3}|[45]xx|sev\d|\d+") == 0
    assert pattern_words(r"[|`{}<>]|^\s*(?:#|\*\*|[-*+] |\d+\. )") == 0
    assert pattern_words("not a pattern, no bar") == 0


def test_a_word_set_counts_its_words_not_its_formats() -> None:
    count = lambda source: collection_words(ast.parse(source, mode="eval").body)  # noqa: E731
    assert count('{"gave up", "no longer", "i\'m", "%Y-%m-%d", "3rd"}') == 3
    assert count('word_set("monday tuesday wednesday 9:30")') == 3
    assert count('"one two three".split()') == 3
    module = ast.parse('WORDS = """one two three"""\nTABLE = WORDS.split()\nOTHER = word_set(WORDS)')
    strings = _Strings(module)
    assert [collection_words(s.value, strings) for s in module.body[1:]] == [3, 3]  # type: ignore[attr-defined]
    assert count('{"written": "writ", "saw": "see"}') == 2
    assert count('{"memories": count, "flags": flags}') == 0  # a record of fields, not a lookup of words
