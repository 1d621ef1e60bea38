from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from consolidation.schedules import periodic_tasks_upsert


class Command(BaseCommand):
    help = "Create or update zeromem's periodic tasks by name (idempotent)."

    def handle(self, *args: Any, **options: Any) -> None:
        for name, created in periodic_tasks_upsert():
            self.stdout.write(f"{'created' if created else 'updated'}: {name}")
