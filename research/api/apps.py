from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "research.api"
    label = "api"
    default_auto_field = "django.db.models.BigAutoField"
