from django.apps import AppConfig


class ConsolidationConfig(AppConfig):
    name = "consolidation"

    def ready(self) -> None:
        from consolidation import webhooks  # noqa: F401 - connects the webhook receiver to memory_event
