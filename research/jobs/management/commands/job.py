"""`manage.py job ID [--json]`: a job's status, steps, artifacts and error."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandError, CommandParser

from research.jobs import selectors
from research.jobs.management.cli import PeopleCommand
from research.jobs.models import ResearchJob


class Command(PeopleCommand):
    help = "Show a job: status, each step with its state, artifact paths and the error."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("job_id", type=int)
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **opts: Any) -> None:
        job = ResearchJob.objects.filter(pk=opts["job_id"]).first()
        if job is None:
            latest = ResearchJob.objects.order_by("-pk").values_list("pk", flat=True).first()
            hint = f"the newest job is {latest}" if latest else "no job has been run yet"
            raise CommandError(f"no job {opts['job_id']} ({hint})")
        summary = selectors.job_summary(job=job)
        if opts["json"]:
            self.stdout.write(json.dumps(summary, ensure_ascii=False))
            return
        self.stdout.write(f"job {job.pk} [{job.engine}] {job.status}: {job.question}")
        for step in summary["steps"]:
            line = f"  {step['id']:<10} {step['status']:<10} {step['title']}"
            if step["error"]:
                line += f"  ({step['error']})"
            self.stdout.write(line)
        for kind, path in summary["artifacts"].items():
            self.stdout.write(f"  {kind}: {path}")
        if job.error:
            self.stdout.write(f"error: {job.error}")
