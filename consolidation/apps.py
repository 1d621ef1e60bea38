from django.apps import AppConfig


class ConsolidationConfig(AppConfig):
    name = "consolidation"
