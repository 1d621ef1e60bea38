from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from zeromem.core import services


class Command(BaseCommand):
    help = "Create an API key for a tenant (created if new) and print its secret once."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", required=True, help="tenant name")
        parser.add_argument("--name", default="", help="a label for the key")

    def handle(self, *args: Any, tenant: str, name: str, **options: Any) -> None:
        key, secret = services.apikey_create(tenant=services.tenant_get_or_create(name=tenant), name=name)
        self.stderr.write(f"API key {key.prefix} for tenant {tenant!r}; the secret is shown only this once:")
        self.stdout.write(secret)
