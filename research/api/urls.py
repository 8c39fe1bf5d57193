from django.urls import path

from research.api import views
from research.api.api import api

urlpatterns = [
    path("api/v1/", api.urls),
    path("settings/tokens/", views.token_list, name="api_tokens"),
    path("settings/tokens/<int:token_id>/revoke/", views.token_revoke, name="api_token_revoke"),
]
