from django.conf.urls import i18n
from django.contrib import admin
from django.db import connection
from django.http import HttpRequest, HttpResponse
from django.urls import include, path
from django.views.decorators.http import require_safe

from research.ratelimit import limit_patterns


@require_safe  # changes nothing, so it takes no POST (every POST route is rate-limited)
def healthz(request: HttpRequest) -> HttpResponse:
    """Liveness for load balancers and container health checks: the process serves and reaches the database."""
    try:
        connection.ensure_connection()
    except Exception:
        return HttpResponse("database unreachable\n", status=503, content_type="text/plain")
    return HttpResponse("ok\n", content_type="text/plain")


urlpatterns = [
    path("healthz", healthz, name="healthz"),
    # Every POST is limited (issue 34); the admin login is also django-axes' (research/logins.py).
    path("admin/", (limit_patterns(admin.site.get_urls(), "admin", "WRITE_RATE"), "admin", admin.site.name)),
    path("i18n/", include(limit_patterns(list(i18n.urlpatterns), "write", "WRITE_RATE"))),
    path("kb/", include("research.knowledge.urls")),
    path("", include("research.api.urls")),
    path("", include("research.jobs.web.urls")),
]

handler400 = "research.errors.bad_request"
handler404 = "research.errors.not_found"
