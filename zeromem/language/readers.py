"""The readers by name. `default` is what the product uses unless a policy names another."""

from __future__ import annotations

from collections.abc import Callable

from zeromem.language import Reader


def _rules() -> Reader:
    from zeromem.language.rules import RulesReader  # the frozen tables import the old domain modules

    return RulesReader()


def _default() -> Reader:
    from zeromem.language.default import DefaultReader  # loads spaCy's pipeline on first use

    return DefaultReader()


READERS: dict[str, Callable[[], Reader]] = {"rules": _rules, "default": _default}


def reader(name: str = "default") -> Reader:
    return READERS[name]()
