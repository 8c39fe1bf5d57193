from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.urls import path
from django.views.generic import RedirectView

from research.jobs.web import conversation_views, kb_views, views
from research.ratelimit import limited_in_service, ratelimited

urlpatterns = [
    # Failed logins are throttled by django-axes in authenticate() itself (research/settings.py AXES_*).
    path("accounts/login/", limited_in_service("LOGIN_RATE")(auth_views.LoginView.as_view()), name="login"),
    path("accounts/logout/", ratelimited("write", "WRITE_RATE")(auth_views.LogoutView.as_view()), name="logout"),
    path("accounts/signup/", views.signup, name="signup"),
    path("", views.job_list, name="job_list"),
    # The job list lives at /; /jobs/ leads there (GET only: a POST is no write).
    path("jobs/", login_required(RedirectView.as_view(pattern_name="job_list", http_method_names=["get", "head"]))),
    path("jobs/new/", views.job_new, name="job_new"),
    path("jobs/<int:job_id>/kb/", kb_views.job_kb_attach, name="job_kb_attach"),
    path("jobs/<int:job_id>/kb/upload/", kb_views.job_kb_upload, name="job_kb_upload"),
    path("jobs/<int:job_id>/", views.job_detail, name="job_detail"),
    path("jobs/<int:job_id>/panel/", views.job_panel, name="job_panel"),
    path("jobs/<int:job_id>/events/", views.job_events, name="job_events"),
    path("jobs/<int:job_id>/plan/", views.job_plan, name="job_plan"),
    path("jobs/<int:job_id>/plan/<int:number>/", views.job_plan_version, name="job_plan_version"),
    path("jobs/<int:job_id>/cancel/", views.job_cancel, name="job_cancel"),
    path("jobs/<int:job_id>/retry/", views.job_retry, name="job_retry"),
    path("jobs/<int:job_id>/delete/", views.job_delete, name="job_delete"),
    path("jobs/<int:job_id>/rerender/", views.job_rerender, name="job_rerender"),
    path("jobs/<int:job_id>/report/edit/", views.job_report_edit, name="job_report_edit"),
    path("jobs/<int:job_id>/report/preview/", views.job_report_preview, name="job_report_preview"),
    path("jobs/<int:job_id>/report/v/<int:number>/", views.job_report_version, name="job_report_version"),
    path("jobs/<int:job_id>/previews/<str:name>", views.job_preview, name="job_preview"),
    path("jobs/<int:job_id>/files/<path:name>", views.artifact_download, name="artifact_download"),
    path("jobs/<int:job_id>/clarify/", conversation_views.job_clarify, name="job_clarify"),
    path("jobs/<int:job_id>/research-anyway/", conversation_views.job_research_anyway, name="job_research_anyway"),
    path("jobs/<int:job_id>/followups/", conversation_views.job_followup, name="job_followup"),
    path("jobs/<int:job_id>/followups/<int:number>/fold/", conversation_views.job_followup_fold,
         name="job_followup_fold"),
]
