"""Secrets in the worker's environment never reach events, logs, artifacts, prompts or the sandbox."""

from __future__ import annotations

import json
import re
import secrets
from pathlib import Path

import pytest
from django.conf import settings

from research.jobs import services
from research.jobs.models import JobEvent, JobStatus, LLMCall
from tests.faults.stack import QUESTION, check_event_log, wait_job
from tests.support.fake_llm import Reply

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

PROBE = """import json, os
print("SANDBOX-ENV " + json.dumps(dict(os.environ), sort_keys=True))
try:
    print("PROC-ENV " + open("/proc/self/environ", "rb").read().decode("latin-1").replace("\\0", " "))
except OSError as exc:
    print("PROC-ENV unreadable", exc)
"""


def test_worker_secrets_never_leak(stack, alice):
    api_key = "sk-LEAKCHECK-" + secrets.token_hex(16)
    secret_key = "LEAKCHECK-secret-" + secrets.token_urlsafe(48)
    markers = [api_key.encode(), secret_key.encode(), b"LEAKCHECK"]
    stack.llm.api_key = api_key  # the model double refuses requests without it: the worker really has it
    stack.beat()
    worker = stack.worker(concurrency=2, LLM_API_KEY=api_key, SECRET_KEY=secret_key)
    stack.director.plan([{"id": "s1"}, {"id": "s2", "step_type": "processing", "depends_on": ["s1"]}])

    def probe(call, body):  # the coder's first program prints the sandbox's whole environment
        return Reply(content=f"```python\n{PROBE}```") if call.agent == "coder" and call.first else None

    stack.director.hooks.append(probe)
    stack.llm.inject("503")  # one retried model error: its log line must not carry the key either
    job = services.job_create(user=alice, question=QUESTION,
                              options={"engine": "llm", "auto_accept": True, "max_steps": 2, "outputs": ["md"]})
    job = wait_job(job, {JobStatus.DONE, JobStatus.FAILED}, timeout=120, stack=stack)
    assert job.status == JobStatus.DONE, job.error
    check_event_log(job)

    # The sandbox ran the probe, and its environment holds no secret.
    runs = [e.payload for e in JobEvent.objects.filter(job=job, type="step.activity")
            if e.payload.get("kind") == "code_result"]
    assert runs and runs[0]["exit_code"] == 0 and "PROC-ENV" in runs[0]["stdout"]  # (the event keeps a tail)
    printed = [m.group(1) for b in stack.llm.requests for msg in b.get("messages", [])
               for m in re.finditer(r"^SANDBOX-ENV (\{.*\})$", str(msg.get("content")), re.MULTILINE)]
    assert printed, "the probe's whole output goes back to the model"
    sandbox_env = json.loads(printed[0])
    assert sandbox_env and not {"LLM_API_KEY", "SECRET_KEY", "DATABASE_URL", "REDIS_URL"} & set(sandbox_env)

    def clean(where: str, data: bytes) -> None:
        for marker in markers:
            assert marker not in data, f"a secret leaked into {where}"

    for event in JobEvent.objects.filter(job=job):
        clean(f"event {event.seq} {event.type}", json.dumps(event.payload).encode())
    for call in LLMCall.objects.filter(job=job):
        clean("an LLM call record", call.error.encode())
    for step in job.steps.all():
        clean(f"step {step.step_id}", (step.result_md + json.dumps(step.result) + step.error).encode())
    clean("the job", (job.error + job.answer + json.dumps(job.options)).encode())
    for version in job.report_versions.all():
        clean("the report", version.markdown.encode())
    folder = Path(settings.MEDIA_ROOT) / "jobs" / str(job.pk)
    files = [p for p in folder.rglob("*") if p.is_file()]
    assert {"report.md"} <= {p.name for p in files}
    for path in files:
        clean(f"artifact {path.name}", path.read_bytes())
    for body in stack.llm.requests:  # prompts: the key travels in the Authorization header only
        clean("a prompt", json.dumps(body).encode())
    log = worker.log.read_bytes()
    assert b"LLM call failed" in log  # the retried error was logged ...
    clean("the worker log", log)  # ... without the key
    for beat in stack.beats:
        clean("the beat log", beat.log.read_bytes())
