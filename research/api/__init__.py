"""The JSON API (/api/v1/, django-ninja) and its per-user tokens."""
