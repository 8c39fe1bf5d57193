from django.urls import path

from research.jobs.web.consumers import JobEventsConsumer

websocket_urlpatterns = [
    path("ws/jobs/<int:job_id>/", JobEventsConsumer.as_asgi()),
]
