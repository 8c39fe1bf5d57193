"""Token writes: create (returns the secret once), revoke, authenticate."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.utils import timezone
from django.utils.translation import gettext as _

from research.api.models import ApiToken

TOKEN_PREFIX = "drk_"  # noqa: S105 - a public marker, not a secret
MAX_ACTIVE_TOKENS = 20
# last_used is refreshed at most this often, so reads do not turn into a write per request.
LAST_USED_GRANULARITY = timedelta(minutes=1)


def token_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def token_create(*, user: User, name: str) -> tuple[ApiToken, str]:
    """Make a token for `user`; returns the row and the secret, which is never stored or shown again."""
    name = (name or "").strip()
    if not name:
        raise ValidationError(_("Give the token a name."))
    if len(name) > 100:
        raise ValidationError(_("The name is too long (at most 100 characters)."))
    if ApiToken.objects.filter(owner=user, revoked_at__isnull=True).count() >= MAX_ACTIVE_TOKENS:
        raise ValidationError(_("You have %(n)d active tokens; revoke one first.") % {"n": MAX_ACTIVE_TOKENS})
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(owner=user, name=name, prefix=secret[:12], token_hash=token_hash(secret))
    return token, secret


def token_revoke(*, user: User, token_id: int) -> ApiToken:
    from research.api.selectors import token_get_for_user

    token = token_get_for_user(user=user, token_id=token_id)
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


def token_authenticate(*, secret: str) -> User | None:
    """The active user a token belongs to, or None."""
    if not secret or not secret.startswith(TOKEN_PREFIX) or len(secret) > 200:
        return None
    token = (ApiToken.objects.select_related("owner")
             .filter(token_hash=token_hash(secret), revoked_at__isnull=True).first())
    if token is None or not token.owner.is_active:
        return None
    now = timezone.now()
    if token.last_used is None or now - token.last_used > LAST_USED_GRANULARITY:
        ApiToken.objects.filter(pk=token.pk).update(last_used=now)
    return token.owner
