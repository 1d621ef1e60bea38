from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps


class ZeromemConfig(AppConfig):
    name = "zeromem"
    verbose_name = "zeromem core"


class OperatorAdminConfig(admin_apps.AdminConfig):
    """Django's admin with the operator pages (dashboard, review queue) on the same site."""

    default = False  # named in INSTALLED_APPS instead of django.contrib.admin
    default_site = "zeromem.admin_site.OperatorAdminSite"
