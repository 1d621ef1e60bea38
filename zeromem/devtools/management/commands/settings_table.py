from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from zeromem.devtools.settings_table import CONFIGURATION, configuration_markdown


class Command(BaseCommand):
    help = ("Write docs/configuration.md: the environment settings zeromem/settings.py reads and the policy's "
            "fields, generated from the two (--check: only say whether the committed file is current).")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--check", action="store_true", help="exit 1 when docs/configuration.md is stale")

    def handle(self, *args: Any, check: bool, **options: Any) -> None:
        text = configuration_markdown()
        if check:
            current = CONFIGURATION.exists() and CONFIGURATION.read_text() == text
            self.stdout.write(f"{CONFIGURATION} is {'current' if current else 'stale'}")
            if not current:
                raise SystemExit(1)
            return
        CONFIGURATION.write_text(text)
        self.stdout.write(f"wrote {CONFIGURATION}")
