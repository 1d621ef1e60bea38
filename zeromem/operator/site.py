"""The admin site: its index is the operator home; plus the operator pages (dashboard, review queue, a user's
page). Staff only (the admin's own login check), each page also checks the model permission it reads or changes."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import URLPattern, URLResolver, path

from zeromem.operator import views as admin_views
from zeromem.operator.home import operator_home
from zeromem.operator.run_words import run_changes


class OperatorAdminSite(admin.AdminSite):
    site_header = "zeromem operator"
    site_title = "zeromem"
    index_title = "Operator home"
    index_template = "admin/zeromem_index.html"

    def get_urls(self) -> list[URLResolver | URLPattern]:

        pages = [
            path("dashboard/", self.admin_view(admin_views.dashboard), name="dashboard"),
            path("review/", self.admin_view(admin_views.review_queue), name="review"),
            path("review/bulk/", self.admin_view(admin_views.review_bulk), name="review_bulk"),
            path("review/<int:entry_id>/<str:decision>/", self.admin_view(admin_views.review_decision),
                 name="review_decide"),
            path("operator/user/", self.admin_view(admin_views.operator_user), name="operator_user"),
            path("operator/user/<str:job>/", self.admin_view(admin_views.operator_user_run),
                 name="operator_user_run"),
        ]
        return pages + super().get_urls()

    def index(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> TemplateResponse:
        """The operator home above the list of every admin page (runs and the queue only for who may see them)."""
        if request.user.has_perm("consolidation.view_consolidationrun"):
            home = operator_home()
            extra_context = {**(extra_context or {}), "home": home,
                             "home_runs": [(run, run_changes(run)) for run in home.runs]}
        return super().index(request, extra_context)

    def each_context(self, request: Any) -> dict[str, Any]:
        return {**super().each_context(request), "operator_pages": True}
