"""Issue 33, "A command line for people": every error is one line on stderr with a non-zero exit and the next
thing to try; with --json the last line of stdout is one JSON object with an `error` string."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from research.knowledge import services as kb_services
from tests.support.procs import base_env

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.django_db(transaction=True)


def _manage(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    # No search provider answers: SearXNG on a closed port, no other web provider.
    child = base_env(SEARCH_PROVIDERS="searxng,knowledge", SEARXNG_URL="http://127.0.0.1:9/", **env)
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=child, capture_output=True,
                          text=True, timeout=120)


def _one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode != 0
    # The test settings' locmem rate-limit cache draws a django-axes system-check warning; that block aside,
    # stderr is one line: no traceback, no usage block.
    text = result.stderr.split("configuration documentation.\n")[-1]
    lines = text.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and "Traceback" not in result.stderr
    return lines[0]


def _json_error(result: subprocess.CompletedProcess[str]) -> dict[str, object]:
    data = json.loads(result.stdout.strip().splitlines()[-1])
    assert isinstance(data, dict) and isinstance(data["error"], str) and data["error"]
    return data


def test_job_that_does_not_exist(db):
    plain = _manage("job", "999")
    assert "no job 999" in _one_error_line(plain)
    as_json = _manage("job", "999", "--json")
    assert "no job 999" in _json_error(as_json)["error"] and as_json.returncode != 0


def test_bad_argument_is_one_line_and_json_too(db):
    line = _one_error_line(_manage("job", "abc"))
    assert "invalid int value" in line and "usage:" not in line
    assert "invalid int value" in _json_error(_manage("job", "abc", "--json"))["error"]
    engine = _manage("research", "How do heat pumps work?", "--engine", "gpt", "--json")
    assert "invalid choice" in _json_error(engine)["error"]


def test_question_with_no_words_is_refused_before_a_job_exists(db):
    from research.jobs.models import ResearchJob

    result = _manage("research", "🔥🏠❓💡", "--engine", "offline", "--json")
    assert "no words" in _one_error_line(result) and "no words" in _json_error(result)["error"]
    assert not ResearchJob.objects.exists()


def test_no_search_and_no_kb_says_to_use_kb_before_running(db, alice):
    from research.jobs.models import ResearchJob

    result = _manage("research", "How efficient are heat pumps?", "--engine", "offline", "--auto-accept",
                     "--json", "--user", "alice")
    line = _one_error_line(result)
    assert "SearXNG refused the connection" in line and "kb add" in line and "--kb NAME" in line
    assert len(line) < 400
    assert "--kb" in _json_error(result)["error"]
    assert not ResearchJob.objects.exists()
    kb_services.collection_create(owner=alice, name="notes")
    named = _one_error_line(_manage("research", "How efficient are heat pumps?", "--engine", "offline",
                                    "--user", "alice"))
    assert "try --kb notes" in named  # the user's own knowledge base, by name


def test_unknown_kb_names_the_ones_there_are(db, alice):
    kb_services.collection_create(owner=alice, name="notes")
    line = _one_error_line(_manage("research", "How efficient are heat pumps?", "--kb", "nope", "--user", "alice"))
    assert "no knowledge base named 'nope'" in line and "--kb notes" in line
