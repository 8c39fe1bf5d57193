"""The report edit check unit: a worker checks a long report edit and saves it as a new version, once
(research.jobs.services.report_edit_submit leaves it here)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _

from research.jobs.dispatch import enqueue_report_edit_check
from research.jobs.events import event_emit
from research.jobs.models import OutputStatus, ReportEditCheck
from research.jobs.services import InvalidAction, report_edit_checked, report_edit_save
from research.jobs.units.lease import OneShotKind, unit_run


class _EditChecks(OneShotKind[ReportEditCheck]):
    """Long report edits checked by a worker, under the lease protocol (lease.py)."""

    model = ReportEditCheck
    name = "edit_checks"
    requeued_type = "report.check_requeued"
    expected = (ValidationError, InvalidAction)

    def describe(self, unit: ReportEditCheck) -> str:
        return f"report edit check {unit.pk}"

    def requeued_payload(self, unit: ReportEditCheck) -> dict[str, Any]:
        return {"check": unit.pk}

    def give_up_reason(self, unit: ReportEditCheck) -> str:
        return _("The edit could not be checked: gave up after %(n)d attempts, the worker checking it was lost "
                 "each time. Save it again to retry.") % {"n": unit.attempts}

    def reason(self, exc: BaseException) -> str:
        # Recorded and shown on the job page; the edit text stays for a retry.
        if isinstance(exc, ValidationError):
            return " ".join(exc.messages)
        if isinstance(exc, InvalidAction):
            return str(exc)
        return _("The edit could not be checked (%(kind)s).") % {"kind": type(exc).__name__}

    def succeed(self, unit: ReportEditCheck, value: Any) -> None:
        # The new version and the check's `done` in one transaction, only by the lease holder: a check redone
        # after a lost worker, or a replaced holder that was only slow, never saves the edit twice.
        markdown, summary = value
        version = report_edit_save(job=unit.job, markdown=markdown, check=summary)
        ReportEditCheck.objects.filter(pk=unit.pk).update(
            **self.ended_fields(OutputStatus.DONE, version=version.number, markdown=""))

    def fail(self, unit: ReportEditCheck, error: str) -> None:
        """Fail the check with a reason the job page shows (`report.check_failed`); the caller holds the row."""
        ReportEditCheck.objects.filter(pk=unit.pk).update(**self.ended_fields(OutputStatus.FAILED, error=error))
        event_emit(job_id=unit.job_id, type="report.check_failed", payload={"check": unit.pk, "error": error})

    def send(self, unit: ReportEditCheck) -> None:
        enqueue_report_edit_check(unit.pk)


EDIT_CHECKS_KIND = _EditChecks()


def _edit_check_claim(check_id: int) -> tuple[ReportEditCheck, str] | None:
    """Claim the check; after STEP_MAX_ATTEMPTS claims it fails, saying why."""
    claim = EDIT_CHECKS_KIND.claim(pk=check_id)
    return None if claim is None else (claim.unit, claim.token)


def report_edit_check_run(*, check_id: int) -> None:
    """The worker's half of report_edit_submit: check the edit and store it as a new version, once.

    A leased unit (research/jobs/units/lease.py): the lease is renewed while the check runs; a worker that
    dies stops renewing and the reaper re-queues the check (`report.check_requeued`).
    """
    unit_run(EDIT_CHECKS_KIND, lambda claim: report_edit_checked(job=claim.unit.job, markdown=claim.unit.markdown),
             pk=check_id)
