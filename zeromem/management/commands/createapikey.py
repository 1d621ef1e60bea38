from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from zeromem.core import services


class Command(BaseCommand):
    help = "Create an API key for a tenant (created if new) and print its secret once."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", required=True, help="tenant name")
        parser.add_argument("--name", default="", help="a label for the key")
        parser.add_argument("--user", default=None,
                            help="scope the key to this user_id: it sees and writes only that user's memories, runs "
                                 "and profiles (default: the whole tenant)")

    def handle(self, *args: Any, tenant: str, name: str, user: str | None, **options: Any) -> None:
        if user is not None and not 1 <= len(user) <= 200:
            raise CommandError("--user must be 1–200 characters")
        key, secret = services.apikey_create(tenant=services.tenant_get_or_create(name=tenant), name=name,
                                             user_id=user)
        scope = f", scoped to user {user!r}" if user else ""
        self.stderr.write(f"API key {key.prefix} for tenant {tenant!r}{scope}; the secret is shown only this once:")
        self.stdout.write(secret)
