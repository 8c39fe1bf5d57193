"""Bearer-token authentication for the API (Authorization: Bearer TOKEN)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.http import HttpRequest
from ninja.security import HttpBearer

from research.api.services import token_authenticate


class TokenAuth(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str) -> User | None:
        user = token_authenticate(secret=token.strip())
        if user is not None:
            request.user = user  # selectors scope by request.user, as in the web views
        return user


def api_user(request: HttpRequest) -> User:
    user: Any = getattr(request, "auth", None)
    assert isinstance(user, User)
    return user
