"""`manage.py research "QUESTION"`: run a job through the same Celery path as the web app.

Contract: docs/architecture.md, "CLI".
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError, CommandParser

from research.jobs import selectors, services
from research.jobs.infra import infrastructure
from research.jobs.management.cli import PeopleCommand
from research.jobs.models import JobEvent, JobStatus, ResearchJob
from research.jobs.options import job_options_clean
from research.render.formats import output_kinds


def cli_user(username: str | None) -> User:
    """The same user as `kb add` resolves (--user, else the first admin), so the web shows the job to them.

    Only on a machine with no users at all is a "cli" user made, so a fresh checkout can still run a job.
    """
    from research.knowledge.management.commands.kb import resolve_user

    if not username and not User.objects.exists():
        user, _ = User.objects.get_or_create(username="cli", defaults={"is_active": True})
        return user
    user = resolve_user(username)
    assert isinstance(user, User)
    return user


def kb_hint(user: User) -> str:
    """The next thing to try when nothing can be searched: the user's own knowledge bases, or how to make one."""
    from research.knowledge.models import Collection

    names = list(Collection.objects.filter(owner=user).order_by("name").values_list("name", flat=True)[:3])
    if names:
        return "try --kb " + " or --kb ".join(_quoted(n) for n in names) + " (add --no-web to search it alone)"
    return ("add documents with `manage.py kb add NAME FILE…` and run with --kb NAME --no-web, "
            "or set SEARXNG_URL to a running SearXNG")


def _quoted(name: str) -> str:
    return name if name.replace("-", "").replace("_", "").isalnum() else json.dumps(name, ensure_ascii=False)


def failure_line(job: ResearchJob) -> str:
    """A failed job's reason in one line with the next thing to try (the raw errors stay in `job ID`)."""
    from research.jobs.web.failures import failure_explain

    explained = failure_explain(job=job)
    if explained is None:
        return job.error.split("\n")[0][:300] if job.error else job.status
    summary = explained["summary"]
    low = summary.lower()
    if "search" in low and not job.options.get("kb"):
        return f"{summary} {kb_hint(job.owner)}"
    if "model" in low or "llm" in low:
        return f"{summary} Is the model server (LLM_BASE_URL) running? Or try --engine offline."
    return f"{summary} {explained['advice']}".strip() + f" (details: manage.py job {job.pk})"


class Command(PeopleCommand):
    help = "Run a research job to the end and print where its artifacts are."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("question")
        parser.add_argument("--auto-accept", action="store_true", help="run the plan without review")
        parser.add_argument("--outputs", default="md", help=f"comma-separated: {','.join(output_kinds())}")
        parser.add_argument("--style", default="academic")
        parser.add_argument("--locale", default="auto")
        parser.add_argument("--max-steps", type=int, default=settings.JOB_DEFAULT_STEPS)
        parser.add_argument("--engine", default=settings.DEFAULT_ENGINE, choices=["llm", "offline", "auto"])
        parser.add_argument("--kb", default=None, help="knowledge base name")
        parser.add_argument("--no-web", action="store_true", help="search only the knowledge base")
        parser.add_argument("--no-direct-answer", action="store_true",
                            help="always research and write a report, never a short direct answer")
        parser.add_argument("--depth", default="standard", choices=["standard", "heavy"],
                            help="heavy: several parallel runs per research step, merged by a synthesis")
        parser.add_argument("--runs", type=int, default=None, help="parallel runs per step when heavy (1-5, default 3)")
        parser.add_argument("--user", default=None, help="owner shown the job on the web (default: first admin)")
        parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
        parser.add_argument("--detach", action="store_true", help="queue the job and return at once")
        parser.add_argument("--timeout", type=float, default=float(settings.JOB_WALL_TIME_S) + 300)

    def handle(self, *args: Any, **opts: Any) -> None:
        from research.jobs.questions import question_clean

        try:  # before anything is set up: a question with no words never becomes a job
            question = question_clean(opts["question"])
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from None
        call_command("migrate", verbosity=0, interactive=False)
        user = cli_user(opts["user"])
        kb_id = None
        if opts["kb"]:
            from research.knowledge.models import Collection

            collection = Collection.objects.filter(owner=user, name=opts["kb"]).first()
            if collection is None:
                raise CommandError(f"no knowledge base named {opts['kb']!r} for user {user.username}; "
                                   + kb_hint(user))
            kb_id = collection.pk
        elif opts["no_web"]:
            raise CommandError("--no-web needs a knowledge base to search; " + kb_hint(user))
        auto_accept = opts["auto_accept"] or not sys.stdin.isatty()
        options = {
            "outputs": opts["outputs"], "style": opts["style"], "locale": opts["locale"],
            "max_steps": opts["max_steps"], "engine": opts["engine"], "auto_accept": auto_accept,
            "kb": kb_id, "web": not opts["no_web"], "direct_answer": not opts["no_direct_answer"],
            "clarify": False,  # nobody answers questions on the command line
            "depth": opts["depth"], "runs": opts["runs"],
        }
        try:  # the one options validator, before Redis or a worker is started for a job that cannot exist
            job_options_clean(options)
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from None
        if kb_id is None:
            self._check_search(user)
        with infrastructure(detach=opts["detach"], echo=True):
            try:
                job = services.job_create(user=user, question=question, options=options)
            except ValidationError as exc:
                raise CommandError("; ".join(exc.messages)) from None
            except services.RateLimited as exc:
                raise CommandError(str(exc)) from None
            except services.CounterUnavailable as exc:
                raise CommandError(exc.message) from None
            if opts["detach"]:
                self.stdout.write(json.dumps({"job": job.pk}) if opts["json"] else f"queued job {job.pk}")
                return
            job = self._wait(job, opts)
        summary = selectors.job_summary(job=job)
        error = failure_line(job) if job.status != JobStatus.DONE else None
        result = {"job": job.pk, "status": job.status, "error": error,
                  "artifacts": summary["artifacts"], "answer": job.answer or None}
        if opts["json"]:
            self.stdout.write(json.dumps(result, ensure_ascii=False))
        else:
            self.stdout.write(f"job {job.pk}: {job.status}")
            if job.answer:
                self.stdout.write(job.answer)
            for kind, path in summary["artifacts"].items():
                self.stdout.write(f"  {kind}: {path}")
            if error:
                self.stderr.write(f"error: {error}")
        if job.status != JobStatus.DONE:
            sys.exit(1)

    def _check_search(self, user: User) -> None:
        """No web search reachable and no --kb: the job could only fail, so say so before it exists."""
        from research.jobs.search_check import web_probe
        from research.jobs.web.failures import search_unreachable_text

        probe = web_probe()
        if not probe["web_ok"]:
            raise CommandError(f"{search_unreachable_text(probe['errors'])} Nothing else can be searched: "
                               + kb_hint(user))

    def _wait(self, job: ResearchJob, opts: dict[str, Any]) -> ResearchJob:
        deadline = time.monotonic() + opts["timeout"]
        seen = 0
        while time.monotonic() < deadline:
            job.refresh_from_db()
            for ev in JobEvent.objects.filter(job=job, seq__gt=seen).order_by("seq"):
                seen = ev.seq
                if ev.type != "report.delta":
                    self.stderr.write(f"[{ev.seq}] {ev.type} {json.dumps(ev.payload, ensure_ascii=False)[:200]}")
            if job.is_terminal:
                return job
            if job.status == JobStatus.AWAITING_REVIEW:
                self._review(job)
            time.sleep(0.3)
        services.job_cancel(job=job)
        job.refresh_from_db()
        raise CommandError(f"job {job.pk} did not finish within {opts['timeout']:.0f} s; cancelled")

    def _review(self, job: ResearchJob) -> None:
        from research.agents.types import Plan

        latest = selectors.plan_latest(job=job)
        assert latest is not None
        plan = Plan.model_validate(latest.plan)
        self.stderr.write(f"Plan v{latest.number}: {plan.title}")
        for step in plan.steps:
            self.stderr.write(f"  {step.id} [{step.step_type}] {step.title}")
        answer = input("Accept this plan? [Y/n, or type feedback to re-plan] ").strip()
        if answer.lower() in ("", "y", "yes"):
            services.plan_submit(job=job, plan=plan, base_version=latest.number, action="accept")
        elif answer.lower() in ("n", "no"):
            services.job_cancel(job=job)
        else:
            services.plan_submit(job=job, plan=plan, base_version=latest.number, action="replan", feedback=answer)
