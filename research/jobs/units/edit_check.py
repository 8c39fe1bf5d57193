"""The report edit check unit: a worker checks a long report edit and saves it as a new version, once
(research.jobs.services.report_edit_submit leaves it here)."""

from __future__ import annotations

import logging

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from research.jobs.events import event_emit
from research.jobs.models import OutputStatus, ReportEditCheck
from research.jobs.services import InvalidAction, report_edit_checked, report_edit_save
from research.jobs.units.leases import LeaseLost, lease_kept
from research.jobs.units.oneshots import oneshot_claim, oneshot_holder

logger = logging.getLogger(__name__)


def _edit_check_end(*, check: ReportEditCheck, error: str) -> None:
    """Fail the check with a reason the job page shows (`report.check_failed`); the caller holds the row."""
    ReportEditCheck.objects.filter(pk=check.pk).update(status=OutputStatus.FAILED, error=error, lease_until=None,
                                                       lease_token="", finished_at=timezone.now())
    event_emit(job_id=check.job_id, type="report.check_failed", payload={"check": check.pk, "error": error})


def _edit_check_claim(check_id: int) -> tuple[ReportEditCheck, str] | None:
    """Claim the check (oneshots.oneshot_claim); after STEP_MAX_ATTEMPTS claims it fails, saying why."""
    return oneshot_claim(ReportEditCheck, check_id, give_up=lambda check: _edit_check_end(check=check, error=_(
        "The edit could not be checked: gave up after %(n)d attempts, the worker checking it was lost "
        "each time. Save it again to retry.") % {"n": check.attempts}))


def report_edit_check_run(*, check_id: int) -> None:
    """The worker's half of report_edit_submit: check the edit and store it as a new version, once.

    A leased unit (research/jobs/units/leases.py): the lease is renewed while the check runs; a worker that dies
    stops renewing and the reaper re-queues the check (`report.check_requeued`). The new version and the
    check's `done` are written in one transaction, and only by the lease holder, so a check redone after a
    lost worker, or a replaced holder that was only slow, never saves the edit twice.
    """
    claimed = _edit_check_claim(check_id)
    if claimed is None:
        return
    check, token = claimed
    with lease_kept(ReportEditCheck, check_id, "lease_until", token_field="lease_token", token=token):  # noqa: S106
        try:
            markdown, summary = report_edit_checked(job=check.job, markdown=check.markdown)
            with transaction.atomic():
                oneshot_holder(ReportEditCheck, check_id, token, what="report edit check")
                version = report_edit_save(job=check.job, markdown=markdown, check=summary)
                ReportEditCheck.objects.filter(pk=check_id).update(
                    status=OutputStatus.DONE, version=version.number, markdown="", lease_until=None,
                    lease_token="", finished_at=timezone.now())
        except LeaseLost:
            logger.warning("report edit check %s passed to another worker; this one stops", check_id)
        except Exception as exc:  # recorded and shown on the job page; the edit text stays for a retry
            if isinstance(exc, ValidationError):
                error = " ".join(exc.messages)
            elif isinstance(exc, InvalidAction):
                error = str(exc)
            else:
                logger.exception("report edit check %s failed", check_id)
                error = _("The edit could not be checked (%(kind)s).") % {"kind": type(exc).__name__}
            with transaction.atomic():
                try:
                    oneshot_holder(ReportEditCheck, check_id, token, what="report edit check")
                except LeaseLost:
                    return  # replaced meanwhile: the new holder reports
                _edit_check_end(check=check, error=error)
