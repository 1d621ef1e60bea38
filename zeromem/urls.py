from django.contrib import admin
from django.urls import path

from zeromem.api import views
from zeromem.api.routes import api

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/public/memory/v2/", api.urls),
    path("metrics", views.metrics, name="metrics"),
]
