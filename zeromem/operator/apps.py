from django.contrib.admin import apps as admin_apps


class OperatorAdminConfig(admin_apps.AdminConfig):
    """Django's admin with the operator pages (dashboard, review queue) on the same site. The model admins of
    all three apps live in this package, so registering them is this app's job, not each app's `admin.py`."""

    default = False  # named in INSTALLED_APPS instead of django.contrib.admin
    default_site = "zeromem.operator.site.OperatorAdminSite"

    def ready(self) -> None:
        super().ready()
        from zeromem.operator import memories, profiles, runs  # noqa: F401 - registers the model admins
