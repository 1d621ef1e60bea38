from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from tqdm import tqdm

from zeromem.core import services
from zeromem.models import Memory


class Command(BaseCommand):
    help = ("Embed memories without a vector (--missing, the default), or clear and recompute every vector "
            "(--all) after a change of ZEROMEMORY_EMBEDDING_MODEL. A dimension change needs a migration first.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--all", action="store_true", help="recompute every vector")

    def handle(self, *args: Any, all: bool, **options: Any) -> None:
        if all:
            cleared = Memory.objects.exclude(embedding=None).update(embedding=None)
            self.stderr.write(f"cleared {cleared} vectors")
        total = Memory.objects.filter(embedding=None).count()
        with tqdm(total=total, unit="memory", file=self.stderr._out) as bar:
            stored = services.memories_embed_pending(progress=bar.update)
        self.stdout.write(f"embedded {stored} of {total} memories")
