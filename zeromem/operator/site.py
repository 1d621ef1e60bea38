"""The admin site, plus the operator pages of issue 9: a dashboard and a review queue. Staff only (the admin's
own login check), each page also checks the model permission it reads or changes."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.urls import URLPattern, URLResolver, path

from zeromem.operator import views as admin_views


class OperatorAdminSite(admin.AdminSite):
    site_header = "zeromem operator"
    site_title = "zeromem"
    index_template = "admin/zeromem_index.html"

    def get_urls(self) -> list[URLResolver | URLPattern]:

        pages = [
            path("dashboard/", self.admin_view(admin_views.dashboard), name="dashboard"),
            path("review/", self.admin_view(admin_views.review_queue), name="review"),
            path("review/<int:entry_id>/<str:decision>/", self.admin_view(admin_views.review_decision),
                 name="review_decide"),
        ]
        return pages + super().get_urls()

    def each_context(self, request: Any) -> dict[str, Any]:
        return {**super().each_context(request), "operator_pages": True}
