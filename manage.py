#!/usr/bin/env python
"""Django's command-line utility. Without DATABASE_URL it starts the embedded services a command needs,
migrates, and stops them again on exit (zeromem.devservices)."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "zeromem.settings")
    from zeromem.devservices import services_for_command

    with services_for_command(sys.argv) as needs_migrate:
        import django
        from django.core.management import call_command, execute_from_command_line

        if needs_migrate:
            django.setup()
            call_command("migrate", verbosity=0, interactive=False)
        execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
