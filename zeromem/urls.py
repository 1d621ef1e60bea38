from django.contrib import admin
from django.urls import path

from zeromem.api import views
from zeromem.api.routes import api

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/public/memory/v2/", api.urls),
    path("metrics", views.metrics, name="metrics"),
    path("healthz", views.healthz, name="healthz"),
]

# Django's own error answers (an unknown URL, a crash outside a route) are in the API's error shape under its
# prefix, and Django's usual pages everywhere else. (With DEBUG on, Django shows its debug pages instead.)
handler400 = api.django_error_handler(400)
handler403 = api.django_error_handler(403)
handler404 = api.django_error_handler(404)
handler500 = api.django_error_handler(500)
