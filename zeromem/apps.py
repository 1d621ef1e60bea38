from django.apps import AppConfig


class ZeromemConfig(AppConfig):
    name = "zeromem"
    verbose_name = "zeromem core"

    def ready(self) -> None:
        from zeromem.core import tasks  # noqa: F401 - registers the kernel's tasks (sent by name) in every process
