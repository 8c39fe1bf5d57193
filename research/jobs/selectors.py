"""Reads. Every user-facing query is scoped to the owner; an outsider gets 404."""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO, Any

from django.contrib.auth.models import AnonymousUser
from django.contrib.auth.models import User as UserModel
from django.db.models import Count, FloatField, QuerySet, Sum
from django.db.models.functions import Coalesce
from django.http import Http404

from research import textre
from research.agents.types import SourceRef
from research.jobs import storage
from research.jobs.models import (
    Artifact,
    JobEvent,
    JobStatus,
    LLMCall,
    PlanVersion,
    ReportVersion,
    ResearchJob,
    StepRun,
)
from research.report.references import Entry

User = UserModel | AnonymousUser


def job_list_for_user(*, user: User) -> QuerySet[ResearchJob]:
    if not user.is_authenticated:
        return ResearchJob.objects.none()
    return ResearchJob.objects.filter(owner_id=user.pk).order_by("-created")


def job_get_for_user(*, user: User, job_id: int) -> ResearchJob:
    if not user.is_authenticated:
        raise Http404("No such job")
    try:
        return ResearchJob.objects.get(pk=job_id, owner_id=user.pk)
    except (ResearchJob.DoesNotExist, ValueError, TypeError):
        raise Http404("No such job") from None


def job_user_can_watch(*, user_id: int | None, job_id: int) -> bool:
    return bool(user_id) and ResearchJob.objects.filter(pk=job_id, owner_id=user_id).exists()


@dataclass(frozen=True)
class Capabilities:
    """What a user may do to a job now. The services refuse what is False here (InvalidAction, StalePlan) and the
    job page shows a button only where it is True: one set of rules for both."""

    cancel: bool
    retry: bool
    delete: bool
    edit_report: bool
    rerender: bool
    ask_followup: bool
    fold_followup: bool
    research_anyway: bool
    answer_clarification: bool
    review_plan: bool


def job_can(*, job: ResearchJob, has_report: bool | None = None) -> Capabilities:
    """The job's capabilities from its status (as loaded: a service passes the row it locked) and whether it
    has a report (`has_report`, else one query)."""
    if has_report is None:
        has_report = job.report_versions.exists()
    status = job.status
    ended = job.is_terminal
    report_ended = has_report and status in (JobStatus.DONE, JobStatus.FAILED)
    return Capabilities(
        cancel=not ended,
        retry=status in (JobStatus.FAILED, JobStatus.CANCELLED),
        # A job waiting for the user holds no worker, so it can go without a cancel first.
        delete=ended or status in (JobStatus.AWAITING_REVIEW, JobStatus.AWAITING_CLARIFICATION),
        edit_report=report_ended,
        rerender=report_ended,  # a failed job with no report has nothing to re-render from
        ask_followup=has_report and status == JobStatus.DONE,
        fold_followup=report_ended,  # folding saves an edited report version
        research_anyway=status == JobStatus.DONE and bool(job.answer) and not has_report,
        answer_clarification=status == JobStatus.AWAITING_CLARIFICATION,
        review_plan=status == JobStatus.AWAITING_REVIEW,
    )


def job_events_after(*, job_id: int, after: int, limit: int = 5000) -> list[dict[str, Any]]:
    rows = JobEvent.objects.filter(job_id=job_id, seq__gt=after).order_by("seq")[:limit]
    return [e.as_message() for e in rows]


def job_events_between(*, job_id: int, after: int, upto: int) -> list[dict[str, Any]]:
    rows = JobEvent.objects.filter(job_id=job_id, seq__gt=after, seq__lte=upto).order_by("seq")
    return [e.as_message() for e in rows]


def plan_latest(*, job: ResearchJob) -> PlanVersion | None:
    return job.plan_versions.order_by("-number").first()


def plan_accepted(*, job: ResearchJob) -> PlanVersion | None:
    return job.plan_versions.filter(accepted=True).order_by("-number").first()


def plan_version_get(*, job: ResearchJob, number: int) -> PlanVersion:
    try:
        return job.plan_versions.get(number=number)
    except PlanVersion.DoesNotExist:
        raise Http404("No such plan version") from None


def report_latest(*, job: ResearchJob) -> ReportVersion | None:
    return job.report_versions.order_by("-number").first()


def report_check_summary(*, job: ResearchJob, version: int) -> dict[str, int] | None:
    """The claim check's counts for one report version (research.report.check), from its report.ready event."""
    events = job.events.filter(type="report.ready", payload__version=version).order_by("-seq")
    check = events.values_list("payload__check", flat=True).first()
    return {k: v for k, v in check.items() if isinstance(v, int)} if isinstance(check, dict) else None


def artifact_get_for_user(*, user: User, job_id: int, name: str) -> Artifact:
    job = job_get_for_user(user=user, job_id=job_id)
    try:
        return job.artifacts.get(name=name)
    except Artifact.DoesNotExist:
        raise Http404("No such file") from None


def artifact_open_for_download(*, user: User, job_id: int, name: str) -> tuple[Artifact, IO[bytes]]:
    """The one way to serve a job file (web views and the API): owner check (404 for anyone else), then the
    stored file opened for streaming, from the local disk or object storage alike."""
    art = artifact_get_for_user(user=user, job_id=job_id, name=name)
    key = str(art.file.name)
    if not storage.key_in_job(key, job_id):
        raise Http404("No such file")
    try:
        return art, storage.file_open(key)
    except FileNotFoundError:
        raise Http404("No such file") from None


def artifact_map(*, job: ResearchJob) -> dict[str, str]:
    """kind → where the file is (a local path, or s3://bucket/key), for the CLI (one file per main kind)."""
    out: dict[str, str] = {}
    for art in job.artifacts.exclude(kind="figure").order_by("created"):
        out[art.kind] = storage.file_location(str(art.file.name))
    return out


def job_cost(*, job: ResearchJob) -> dict[str, Any]:
    rows = (
        LLMCall.objects.filter(job=job)
        .values("agent")
        .annotate(
            calls=Count("id"),
            prompt=Coalesce(Sum("prompt_tokens"), 0),
            completion=Coalesce(Sum("completion_tokens"), 0),
            seconds=Coalesce(Sum("seconds"), 0.0, output_field=FloatField()),
        )
        .order_by("agent")
    )
    agents = list(rows)
    total = {
        "calls": sum(r["calls"] for r in agents),
        "prompt": sum(r["prompt"] for r in agents),
        "completion": sum(r["completion"] for r in agents),
        "seconds": round(sum(r["seconds"] for r in agents), 2),
    }
    return {"agents": agents, "total": total}


def step_runs_by_step(*, job: ResearchJob) -> dict[int, list[dict[str, Any]]]:
    """Heavy mode: each step's parallel runs (JobStep pk -> one dict per run, in order), in one query."""
    out: dict[int, list[dict[str, Any]]] = {}
    for run in StepRun.objects.filter(job=job).order_by("step_id", "index"):
        notes = run.result.get("notes", {}) if isinstance(run.result, dict) else {}
        sources = notes.get("sources") if isinstance(notes, dict) else None
        out.setdefault(run.step_id, []).append({
            "index": run.index, "status": run.status, "attempts": run.attempts,
            "emphasis": str(run.variant.get("emphasis", "")),
            "opening_query": str(run.variant.get("opening_query", "")),
            "sources": len(sources) if isinstance(sources, list) else 0, "chars": len(run.result_md),
            "error": run.error or None,
        })
    return out


def job_summary(*, job: ResearchJob) -> dict[str, Any]:
    """The job as one JSON object (CLI `job ID --json`)."""
    heavy = job.options.get("depth") == "heavy"
    runs = step_runs_by_step(job=job) if heavy else {}
    return {
        "job": job.pk,
        "status": job.status,
        "engine": job.engine,
        "question": job.question,
        "locale": job.locale,
        "error": job.error or None,
        "answer": job.answer or None,
        "depth": job.options.get("depth", "standard"),
        "steps": [
            {"id": s.step_id, "title": s.title, "type": s.step_type, "status": s.status,
             "attempts": s.attempts, "error": s.error or None,
             # Heavy jobs: one entry per parallel run ([] for a step that ran once, e.g. processing).
             **({"runs": runs.get(s.pk, [])} if heavy else {})}
            for s in job.steps.order_by("position")
        ],
        "outputs": {r.kind: {"status": r.status, "error": r.error or None} for r in job.renders.all()},
        "artifacts": artifact_map(job=job),
        "tokens": {"prompt": job.prompt_tokens, "completion": job.completion_tokens},
        "events": job.event_seq,
    }


def report_seen_references(*, job: ResearchJob) -> list[Entry] | None:
    """The references list a user editing the report sees: the latest version's (None: it has none)."""
    from research.report.references import references_entries

    latest = job.report_versions.order_by("-number").values_list("markdown", flat=True).first()
    return references_entries(latest) if latest else None


def report_unknown_citations(*, job: ResearchJob, markdown: str) -> list[int]:
    """The [n] in an edited report that match no source of the job (same grammar as generated reports).

    Numbers resolve the way the save does (research.report.check.citation_targets): through the
    edit's own references list when it has one, else through the list the user saw (the latest
    version's), never silently through the registry's internal numbers.
    """
    from research.report.check import citation_targets
    from research.report.citations import citation_numbers, strip_references_section

    sources = [SourceRef(number=s.number, url=s.url, title=s.title, text="", kind=s.kind)
               for s in job.sources.order_by("number")]
    known = citation_targets(markdown, sources, seen=report_seen_references(job=job))
    return [n for n in citation_numbers(strip_references_section(markdown)) if n not in known]


def report_citable_numbers(*, job: ResearchJob, markdown: str) -> list[int]:
    """The [n] an edited report may cite: its own references list's numbers when it has one, else those of
    the list the user saw, else the registry's (the same resolution as report_unknown_citations), sorted."""
    from research.agents.types import SourceRef
    from research.report.check import citation_targets

    sources = [SourceRef(number=s.number, url=s.url, title=s.title, text="", kind=s.kind)
               for s in job.sources.order_by("number")]
    return sorted(citation_targets(markdown, sources, seen=report_seen_references(job=job)))


def report_diff(*, old: str, new: str, old_label: str, new_label: str) -> list[tuple[str, str]]:
    """A unified line diff as (kind, line) pairs: kind is add, del, hunk or same."""
    import difflib

    out: list[tuple[str, str]] = []
    for line in difflib.unified_diff(old.splitlines(), new.splitlines(), old_label, new_label, lineterm="", n=2):
        if line.startswith(("+++", "---")):
            continue
        kind = {"+": "add", "-": "del", "@": "hunk"}.get(line[:1], "same")
        out.append((kind, line))
    return out


def report_in_registry_numbers(*, job: ResearchJob, markdown: str) -> str:
    """The report body with its citations written as registry numbers (Source.number), without references.

    Final reports number their references 1..n (research.report.check); the follow-up answer cites
    registry numbers, so both are brought to one numbering before they meet.
    """
    from research.report.check import citation_targets
    from research.report.citations import CITATION, _numbers, _segments, strip_references_section

    sources = [SourceRef(number=s.number, url=s.url, title=s.title, text="", kind=s.kind)
               for s in job.sources.order_by("number")]
    targets = citation_targets(markdown, sources)

    def sub(match: textre.Match) -> str:
        numbers = [targets[n].number for n in _numbers(match.group(2)) if n in targets]
        return match.group(1) + "".join(f"[{n}]" for n in dict.fromkeys(numbers)) if numbers else ""

    body = strip_references_section(markdown)
    return "".join(seg if code else CITATION.sub(sub, seg) for seg, code in _segments(body)).rstrip()
