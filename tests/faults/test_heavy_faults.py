"""Heavy mode under a worker fault: kill -9 of the worker running one of a step's parallel runs loses that run
only; the reaper re-queues it, another worker redoes it, the step synthesizes and the job ends `done`.

Real parts as in test_worker_faults.py: a Redis server, Celery worker processes and beat, the model double
over HTTP (holding the runs at a gate so the kill lands mid-run), the CLI (`research --depth heavy --runs 2`,
`job ID --json`).
"""

from __future__ import annotations

import json

import pytest

from research.jobs.models import JobStep, LLMCall, ResearchJob, StepRun, StepStatus
from tests.faults.stack import QUESTION, check_event_log, job_summary_when_ended, kill_worker, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_worker_killed_mid_run_loses_only_that_run_and_the_job_ends_done(stack):
    stack.beat()
    first = stack.worker(concurrency=1)
    second = stack.worker(concurrency=1)
    stack.director.record_pids = True
    stack.director.plan([{"id": "s1"}])
    held = stack.director.gate("researcher", "s1", times=2)  # both runs' first model calls wait here

    started = stack.manage("research", QUESTION, "--engine", "llm", "--auto-accept", "--max-steps", "1",
                           "--outputs", "md", "--depth", "heavy", "--runs", "2", "--detach", "--json")
    assert started.returncode == 0, started.stderr[-3000:]
    job = ResearchJob.objects.get(pk=json.loads(started.stdout.strip().splitlines()[-1])["job"])

    wait_until(lambda: held.hits == 2, timeout=90, what="both runs to reach the model", stack=stack)
    calls = stack.director.starts("s1")
    doomed = first.pids()
    # One run in each worker (each has one slot): the kill takes exactly one of them.
    assert sorted(c.pid in doomed for c in calls) == [False, True], (calls, doomed)
    kill_worker(first, stack=stack)  # kill -9 of the whole worker: parent and pool child
    held.open()

    summary = job_summary_when_ended(job, timeout=120, stack=stack)
    assert summary["status"] == "done", summary
    runs = summary["steps"][0]["runs"]
    assert [r["status"] for r in runs] == ["done", "done"]
    assert sorted(r["attempts"] for r in runs) == [1, 2], "exactly the killed run is redone"

    rows = {r.index: r for r in StepRun.objects.filter(job=job)}
    lost = next(i for i, r in rows.items() if r.attempts == 2)
    starts = stack.director.starts("s1")
    assert len(starts) == 3, "two runs, plus the lost one once more"
    assert starts[2].pid in second.pids() and starts[2].pid not in doomed
    step = JobStep.objects.get(job=job, step_id="s1")
    assert step.status == StepStatus.DONE and step.attempts == 1  # the step itself was never lost
    assert step.result["notes"]["runs_done"] == [0, 1] and step.result["notes"]["runs_lost"] == []

    events = check_event_log(job)
    requeued = [e for e in events if e.type == "run.requeued"]
    assert len(requeued) == 1 and requeued[0].payload["run"] == lost and "lease" in requeued[0].payload["reason"]
    assert not [e for e in events if e.type == "step.requeued"]
    assert [e.payload["attempt"] for e in events if e.type == "run.started" and e.payload["run"] == lost] == [1, 2]
    assert [e.type for e in events].count("step.synthesizing") == 1
    assert [c.agent for c in stack.director.calls].count("synthesis") == 1
    # Cost accounting tells the runs apart; the synthesis belongs to the step itself.
    researched = set(LLMCall.objects.filter(job=job, agent="researcher").values_list("run", flat=True))
    assert researched == {0, 1}
    assert list(LLMCall.objects.filter(job=job, agent="synthesis").values_list("run", flat=True)) == [None]
    assert [e.type for e in events].count("job.done") == 1
