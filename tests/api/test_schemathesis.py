"""The OpenAPI contract holds against a live server: schemathesis (a short, seeded profile) reports 0 findings.

Every status code the API answers is documented per operation (401, 404, 409, 422, 429 with Retry-After),
and a request the schema allows is accepted (2xx) or refused for a reason the schema documents (404 for a
job that is not yours, 409 for an action the job's state does not allow)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from research.api import services as token_services
from research.jobs import services
from tests.support.procs import AsgiServer

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

SEED = int(os.environ.get("SCHEMATHESIS_SEED", "20251125"))
MAX_EXAMPLES = int(os.environ.get("SCHEMATHESIS_MAX_EXAMPLES", "12"))


@pytest.fixture
def api_server(django_db_setup, stack_env) -> Iterator[AsgiServer]:
    # High limits: the run itself must not be throttled (429 is checked apart, in test_tokens_and_routes).
    server = AsgiServer({**stack_env, "API_RATE": "100000/m", "JOB_CREATE_RATE": "100000/h"}).start()
    yield server
    server.stop()


def _awaiting_review(user) -> int:
    """A job of the token's owner with a plan waiting for review: the plan, clarify, follow-up and action
    routes then reach their rules (400, 409) rather than 404."""
    from research.agents.types import Plan, PlanStep
    from research.jobs.models import JobStatus, ResearchJob

    job = services.job_create(user=user, question="What is the state of heat pumps?",
                              options={"engine": "offline", "max_steps": 3})
    plan = Plan(locale="en-US", title="Heat pumps", thought="",
                steps=[PlanStep(id="a", title="Costs", description="", step_type="research", need_search=True)])
    services.plan_version_create(job=job, plan=plan, author="planner")
    ResearchJob.objects.filter(pk=job.pk).update(status=JobStatus.AWAITING_REVIEW)  # where the planner leaves it
    return job.pk


# The plan editor's rules across steps (unique ids, dependencies on earlier steps) are beyond a JSON schema;
# the operation documents them as its 400, so a schema-valid plan refused with 400 is the documented answer.
CONFIG = """
[[operations]]
include-path = "/api/v1/jobs/{job_id}/plan"
checks.positive_data_acceptance.expected-statuses = ["2XX", "400", "401", "404", "409", "429"]
"""


@pytest.mark.parametrize("ids", ["any", "yours"])
def test_schemathesis_finds_nothing(api_server, alice, tmp_path, ids):
    st = shutil.which("st", path=str(Path(sys.executable).parent))
    assert st, "schemathesis is in requirements-dev.txt"
    job_id = _awaiting_review(alice)
    _, secret = token_services.token_create(user=alice, name="schemathesis")
    config = tmp_path / "schemathesis.toml"
    # "any": generated ids (mostly 404); "yours": every job route on the owner's job under review.
    config.write_text(CONFIG + (f'\n[parameters]\n"path.job_id" = {job_id}\n' if ids == "yours" else ""))
    result = subprocess.run(
        [st, "--config-file", str(config), "run", api_server.url + "/api/v1/openapi.json", "--url", api_server.url,
         "-H", f"Authorization: Bearer {secret}",
         "--checks", "all", "--seed", str(SEED), "--max-examples", str(MAX_EXAMPLES),
         "--phases", "examples,coverage,fuzzing", "--workers", "1", "--no-color",
         "--generation-database", "none", "--request-timeout", "20",
         # A generator's own health check (too many generated file names filtered out as unusable in a URL
         # path), not a finding about the API.
         "--suppress-health-check", "filter_too_much",
         # The event stream stays open while the job runs (no worker here): its contract is tested live
         # in tests/api/test_live_api.py.
         "--exclude-path-regex", "/events/stream$",
         "--report", "junit", "--report-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout[-12000:] + result.stderr[-3000:]
    print(result.stdout[-1500:])
    # It really ran: every operation but the excluded stream, many cases each, and no check failed.
    assert "Tested: 13" in result.stdout, result.stdout[-3000:]
    generated = re.search(r"(\d+) generated, (\d+) passed", result.stdout)
    assert generated and int(generated.group(1)) >= 13 * MAX_EXAMPLES, result.stdout[-3000:]
    assert generated.group(1) == generated.group(2), result.stdout[-3000:]
