from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from tqdm import tqdm

from zeromem.core import services


class Command(BaseCommand):
    help = ("Store the language reader's parse of every memory that has none, or one kept by another version of the "
            "reader (run it after an upgrade whose changelog says the reader's features version changed: until "
            "then search and the nightly runs parse those memories afresh on each read). Safe to stop and rerun.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--batch", type=int, default=256, help="memories parsed and written at a time")
        parser.add_argument("--json", action="store_true", dest="as_json",
                            help="end with one JSON line: {pending, stored}")

    def handle(self, *args: Any, batch: int, as_json: bool, **options: Any) -> None:
        pending = services.memories_unparsed_count()
        with tqdm(total=pending, unit="memory", file=self.stderr._out) as bar:
            stored = services.memories_reparse(batch_size=batch, progress=bar.update)
        self.stdout.write(f"parsed {stored} of {pending} memories")
        if as_json:
            self.stdout.write(json.dumps({"pending": pending, "stored": stored}))
