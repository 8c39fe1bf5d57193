from django.contrib import admin
from django.db import connection
from django.http import HttpRequest, HttpResponse
from django.urls import include, path


def healthz(request: HttpRequest) -> HttpResponse:
    """Liveness for load balancers and container health checks: the process serves and reaches the database."""
    try:
        connection.ensure_connection()
    except Exception:
        return HttpResponse("database unreachable\n", status=503, content_type="text/plain")
    return HttpResponse("ok\n", content_type="text/plain")


urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("i18n/", include("django.conf.urls.i18n")),
    path("kb/", include("research.knowledge.urls")),
    path("", include("research.api.urls")),
    path("", include("research.jobs.web.urls")),
]

handler400 = "research.errors.bad_request"
handler404 = "research.errors.not_found"
