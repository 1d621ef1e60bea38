from django.apps import AppConfig


class DevtoolsConfig(AppConfig):
    """Development tooling (demo, bench, evaluate, prove, browser check): installed only where its package is
    present, so a production wheel — which leaves `zeromem.devtools` out — starts without it."""

    name = "zeromem.devtools"
    label = "devtools"
    verbose_name = "zeromem development tools"
