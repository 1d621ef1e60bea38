from django.apps import AppConfig


class ZeromemConfig(AppConfig):
    name = "zeromem"
    verbose_name = "zeromem core"
