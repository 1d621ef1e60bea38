from __future__ import annotations

import uuid
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from zeromem.core import services
from zeromem.models import Memory


class Command(BaseCommand):
    help = ("Embed memories without a vector (the default), or recompute every vector in place (--all) after a "
            "change of the embedding model; searches use the old vectors until each page is replaced. A stopped "
            "--all run resumes with --after <the last id it reported>. A dimension change needs a migration first.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--all", action="store_true", help="recompute every vector")
        parser.add_argument("--after", type=uuid.UUID, default=None,
                            help="with --all: resume behind this memory id (printed as the run goes)")
        parser.add_argument("--batch", type=int, default=256, help="memories embedded and written at a time")

    def handle(self, *args: Any, all: bool, after: uuid.UUID | None, batch: int, **options: Any) -> None:
        if after and not all:
            raise CommandError("--after resumes a `reembed --all` run; give --all too")
        if all:
            self._all(after, batch)
            return
        total = Memory.objects.filter(embedding=None).count()
        with tqdm(total=total, unit="memory", file=self.stderr._out) as bar:
            stored = services.memories_embed_pending(batch_size=batch, progress=bar.update)
        self.stdout.write(f"embedded {stored} of {total} memories")

    def _all(self, after: uuid.UUID | None, batch: int) -> None:
        total = (Memory.objects.filter(id__gt=after) if after else Memory.objects).count()

        def progress(done: int, last: uuid.UUID) -> None:
            bar.update(done)
            bar.set_postfix_str(f"resume: --all --after {last}")

        with tqdm(total=total, unit="memory", file=self.stderr._out) as bar:
            try:
                replaced = services.memories_reembed(after=after, batch_size=batch, progress=progress)
            except services.ReembedStopped as stopped:
                resume = f" --after {stopped.after}" if stopped.after else ""
                raise CommandError(f"the embedder failed (see the log above); nothing of that page was written. "
                                   f"Resume with: manage.py reembed --all{resume}") from stopped
        self.stdout.write(f"re-embedded {replaced} of {total} memories")
