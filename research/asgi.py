"""ASGI entry point: HTTP through a body-size cap and Django; WebSockets through Channels (origin, session)."""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "research.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from research.jobs.web.asgi_limits import BodySizeLimitMiddleware, install_daphne_body_cap  # noqa: E402
from research.jobs.web.routing import websocket_urlpatterns  # noqa: E402
from research.jobs.web.ws_origin import SameOriginValidator  # noqa: E402

# daphne spools a body to a temporary file before the app sees it: cap it while Twisted receives it.
install_daphne_body_cap()

application = ProtocolTypeRouter(
    {
        # Bodies are counted as they stream in: oversized (also chunked) requests get 413 before Django spools them.
        "http": BodySizeLimitMiddleware(django_asgi_app),
        "websocket": SameOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)
