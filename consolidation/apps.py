from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_migrate


class ConsolidationConfig(AppConfig):
    name = "consolidation"

    def ready(self) -> None:
        # Wiring: the webhook receiver joins memory_events_recorded, and the tasks register with Celery in every process
        # (web included), since triggers send them by name through the app's registry.
        from consolidation import tasks, webhooks  # noqa: F401

        # Every `migrate` (compose's migrate service, a dev checkout, the test database) leaves the beat schedules
        # in place: a deployment whose jobs silently never run is not possible.
        post_migrate.connect(_schedules_upsert, sender=self, dispatch_uid="zeromem-schedules")


def _schedules_upsert(sender: AppConfig, **kwargs: Any) -> None:
    from consolidation.schedules import periodic_tasks_upsert  # the app registry is ready only now

    periodic_tasks_upsert()
