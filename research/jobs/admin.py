from django.contrib import admin

from research.jobs.models import (
    Artifact,
    JobEvent,
    JobStep,
    LLMCall,
    OutputRender,
    PlanVersion,
    ReportVersion,
    ResearchJob,
    Source,
)


@admin.register(ResearchJob)
class ResearchJobAdmin(admin.ModelAdmin):
    list_display = ("id", "owner", "status", "engine", "created", "question")
    list_filter = ("status", "engine")
    search_fields = ("question",)


@admin.register(JobEvent)
class JobEventAdmin(admin.ModelAdmin):
    list_display = ("job", "seq", "type", "created")
    list_filter = ("type",)


@admin.register(Artifact)
class ArtifactAdmin(admin.ModelAdmin):
    list_display = ("job", "kind", "name", "size", "created")


@admin.register(JobStep)
class JobStepAdmin(admin.ModelAdmin):
    list_display = ("job", "step_id", "title", "status", "attempts")


for model in (PlanVersion, Source, ReportVersion, OutputRender, LLMCall):
    admin.site.register(model)
