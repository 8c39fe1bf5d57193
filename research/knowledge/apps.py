from django.apps import AppConfig


class KnowledgeConfig(AppConfig):
    name = "research.knowledge"
    label = "knowledge"
    verbose_name = "Knowledge bases"
