"""Token reads, scoped to the owner (an outsider gets 404)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.http import Http404

from research.api.models import ApiToken
from research.jobs.models import ResearchJob


def token_list_for_user(*, user: User) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(owner=user).order_by("-created")


def token_get_for_user(*, user: User, token_id: int) -> ApiToken:
    try:
        return ApiToken.objects.get(pk=token_id, owner=user)
    except (ApiToken.DoesNotExist, ValueError, TypeError):
        raise Http404("No such token") from None


def job_detail(*, job: ResearchJob) -> dict[str, Any]:
    """The job as the API shows it: status, latest plan, steps, outputs, artifacts, latest report, sources."""
    from research.jobs import selectors as job_selectors

    plan = job_selectors.plan_latest(job=job)
    report = job_selectors.report_latest(job=job)
    runs = job_selectors.step_runs_by_step(job=job)
    return {
        "id": job.pk, "status": job.status, "question": job.question, "title": job.title, "engine": job.engine,
        "options": job.options, "answer": job.answer or None, "error": job.error or None,
        "created": job.created, "started_at": job.started_at, "finished_at": job.finished_at,
        "last_event_seq": job.event_seq,
        "plan": ({"version": plan.number, "author": plan.author, "accepted": plan.accepted, "plan": plan.plan}
                 if plan else None),
        "steps": [
            {"id": s.step_id, "title": s.title, "description": s.description, "type": s.step_type,
             "status": s.status, "attempts": s.attempts, "depends_on": list(s.depends_on),
             "error": s.error or None, "runs": runs.get(s.pk, [])}
            for s in job.steps.order_by("position")
        ],
        "outputs": {r.kind: {"status": r.status, "error": r.error or None} for r in job.renders.all()},
        "artifacts": [
            {"name": a.name, "kind": a.kind, "size": a.size, "sha256": a.sha256,
             "url": f"/api/v1/jobs/{job.pk}/files/{a.name}"}
            for a in job.artifacts.order_by("kind", "name")
        ],
        "report": ({"version": report.number, "author": report.author, "markdown": report.markdown}
                   if report else None),
        "sources": [{"number": s.number, "url": s.url, "title": s.title, "kind": s.kind}
                    for s in job.sources.order_by("number").only("number", "url", "title", "kind")],
        "url": f"/jobs/{job.pk}/",
        "clarify_questions": list(job.options.get("clarify_questions") or []),
        "clarifications": list(job.options.get("clarifications") or []),
    }
