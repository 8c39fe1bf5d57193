from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "research.jobs"
    label = "jobs"
    verbose_name = "Research jobs"
