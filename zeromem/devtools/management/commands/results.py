from __future__ import annotations

import argparse
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from zeromem.devtools.results import PAGE, RecordError, record, render


class Command(BaseCommand):
    help = ("Recorded figures (docs/results/). `results record -- evaluate updates`: run a bench, evaluate or prove "
            "command with --json and keep its JSON with the command, commit and machine; `results render`: write "
            "docs/results.md from every recording (`--check`: only say whether it is up to date).")

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="which", required=True)
        rec = sub.add_parser("record", help="run one bench/evaluate/prove command and record its JSON")
        rec.add_argument("command", nargs=argparse.REMAINDER, help="the command after --, e.g. -- bench calibrate")
        ren = sub.add_parser("render", help="write docs/results.md from docs/results/data/*.json")
        ren.add_argument("--check", action="store_true", help="exit 1 when the page differs from the rendering")

    def handle(self, *args: Any, which: str, **options: Any) -> None:
        if which == "record":
            command = options["command"][1:] if options["command"][:1] == ["--"] else options["command"]
            try:
                path = record(args=command)
            except RecordError as error:
                raise CommandError(str(error)) from error
            self.stdout.write(f"recorded in {path}; run `manage.py results render` to update {PAGE.name}")
        elif options["check"]:
            if not PAGE.exists() or PAGE.read_text() != render():
                raise CommandError(f"{PAGE} is not the rendering of the recorded figures: run `results render`")
        else:
            PAGE.write_text(render())
            self.stdout.write(f"wrote {PAGE}")
