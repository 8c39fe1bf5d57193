"""Per-user API tokens. Only a SHA-256 of the secret is stored; the secret is shown once."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ApiToken(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    # The first characters of the token, so a user can tell tokens apart without the secret.
    prefix = models.CharField(max_length=16, db_index=True)
    # Tokens are 256-bit random strings, so a fast hash is enough (no password stretching needed).
    token_hash = models.CharField(max_length=64, unique=True)
    created = models.DateTimeField(auto_now_add=True)
    last_used = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…) of {self.owner_id}"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None
