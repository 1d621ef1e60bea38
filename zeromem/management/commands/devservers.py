from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from zeromem.devservices import EmbeddedServices


class Command(BaseCommand):
    help = "Start, stop or show the embedded PostgreSQL + pgvector and Valkey (data under var/)."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["start", "stop", "status"])

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        services = EmbeddedServices()
        if action == "start":
            urls = services.start()
            self.stdout.write(f"postgres: {urls.database_url}\nvalkey:   {urls.redis_url}")
            self.stdout.write("Other commands reuse these until `manage.py devservers stop`.")
        elif action == "stop":
            services.stop()
            self.stdout.write("stopped")
        for name, pid in services.status().items():
            self.stdout.write(f"{name}: {pid if pid else 'not running'}")
