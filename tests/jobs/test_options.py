"""One validator for job options (issue 34, item 6; issue 30, "Typed seams"): the web form, the API, the CLI and
the MCP `deep_research` tool refuse the same bad options, and nothing is created. Before, MCP took `runs: "3"`
and `runs: true` (a heavy job with one run) where the API answered 422."""

from __future__ import annotations

import asyncio
import json

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from hypothesis import given, settings
from hypothesis import strategies as st

from research.api import services as token_services
from research.jobs import dispatch
from research.jobs.models import ResearchJob
from research.jobs.options import (
    STAGE_DATA_KEYS,
    USER_OPTION_KEYS,
    job_options_clean,
    job_stage_data,
    job_user_options,
    options_with_stage,
    options_without_stage,
)

# (options, the validator's words). Each is refused by every entry point that can express it.
BAD_JSON = [
    ({"depth": "heavy", "runs": "3"}, "Runs must be a whole number"),
    ({"depth": "heavy", "runs": True}, "Runs must be a whole number"),
    ({"depth": "heavy", "runs": 2.5}, "Runs must be a whole number"),
    ({"depth": "heavy", "runs": 6}, "Runs must be between 1 and 5"),
    ({"depth": "heavy", "runs": 0}, "Runs must be between 1 and 5"),
    ({"depth": "deep"}, "Unknown depth"),
    ({"max_steps": 0}, "Max steps must be between 1 and"),
    ({"max_steps": "3"}, "Max steps must be a whole number"),
    ({"style": "poem"}, "Unknown report style"),
    ({"outputs": ["docx"]}, "Unknown output"),
    ({"auto_accept": "yes"}, "auto_accept must be true or false"),
    ({"web": 1}, "web must be true or false"),
    ({"kb": True}, "knowledge base must be given by its id"),
]
# The same, as a command line or a form can spell them (text: "3" is how both write the number 3).
BAD_TEXT = [
    ({"depth": "heavy", "runs": "6"}, "Runs must be between 1 and 5"),
    ({"depth": "heavy", "runs": "0"}, "Runs must be between 1 and 5"),
    ({"max_steps": "0"}, "Max steps must be between 1 and"),
    ({"style": "poem"}, "Unknown report style"),
    ({"outputs": "docx"}, "Unknown output"),
]
IDS = [json.dumps(bad) for bad, _ in BAD_JSON]


@pytest.fixture(autouse=True)
def _no_queue(monkeypatch):
    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: None)


@pytest.mark.parametrize(("bad", "words"), BAD_JSON, ids=IDS)
def test_the_validator_refuses_with_words(bad, words):
    with pytest.raises(ValidationError) as exc:
        job_options_clean({"engine": "offline", **bad})
    assert words in " ".join(exc.value.messages)


@pytest.mark.django_db
@pytest.mark.parametrize(("bad", "words"), BAD_JSON, ids=IDS)
def test_the_api_refuses_with_422(alice, bad, words):
    _token, secret = token_services.token_create(user=alice, name="t")
    answer = Client().post("/api/v1/jobs", json.dumps({"question": "What limits heat pumps?", "engine": "offline",
                                                       **bad}),
                           content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert answer.status_code == 422, answer.content
    assert next(iter(bad.keys() - {"depth"}), "depth") in answer.json()["detail"]
    assert not ResearchJob.objects.exists()


def _mcp_call(user, arguments: dict):
    from mcp import Client as McpClient

    from research.api.mcp_server import build_server

    async def go():
        async with McpClient(build_server(user=user, base_url="http://testserver.example")) as client:
            return await client.call_tool("deep_research", arguments)

    return asyncio.run(go())


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("bad", "words"), BAD_JSON, ids=IDS)
def test_the_mcp_tool_refuses_the_same(alice, bad, words):
    result = _mcp_call(alice, {"question": "What limits heat pumps?",
                               "options": {"engine": "offline", "wait_s": 1, **bad}})
    assert result.is_error
    text = " ".join(getattr(c, "text", "") for c in result.content)
    assert next(iter(bad.keys() - {"depth"}), "depth") in text, text
    assert not ResearchJob.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(("bad", "words"), BAD_TEXT, ids=[json.dumps(b) for b, _ in BAD_TEXT])
def test_the_cli_refuses_before_starting_anything(alice, monkeypatch, bad, words):
    from research.jobs.management.commands import research as command

    def no_infrastructure(**kwargs):
        raise AssertionError("the options were refused only after Redis and a worker were started")

    monkeypatch.setattr(command, "infrastructure", no_infrastructure)
    argv = ["What limits heat pumps?", "--user", "alice", "--engine", "offline", "--auto-accept"]
    for key, value in bad.items():
        argv += [f"--{key.replace('_', '-')}", value]
    with pytest.raises(CommandError) as exc:
        call_command("research", *argv)
    assert words in str(exc.value)
    assert not ResearchJob.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(("bad", "words"), BAD_TEXT, ids=[json.dumps(b) for b, _ in BAD_TEXT])
def test_the_web_form_refuses_the_same(alice_client, bad, words):
    post = {"question": "What limits heat pumps?", "style": "academic", "locale": "auto", "max_steps": "2",
            "engine": "offline", "web": "on", **bad}
    answer = alice_client.post("/jobs/new/", post)
    assert answer.status_code == 400
    assert not ResearchJob.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_mcp_still_takes_good_options(alice):
    result = _mcp_call(alice, {"question": "What limits heat pumps?",
                               "options": {"engine": "offline", "depth": "heavy", "runs": 2, "wait_s": 0}})
    assert not result.is_error, result.content
    job = ResearchJob.objects.get()
    assert job.options["depth"] == "heavy" and job.options["runs"] == 2 and job.options["auto_accept"] is True


def test_user_options_and_stage_data_are_apart():
    clean = job_options_clean({})
    assert set(clean) == USER_OPTION_KEYS
    stored = options_with_stage(clean, clarify_questions=["Which country?"], replan_feedback="More data",
                                replan_base=2)
    assert job_user_options(stored) == clean
    assert job_stage_data(stored) == {"clarify_questions": ["Which country?"], "replan_feedback": "More data",
                                      "replan_base": 2}
    assert options_without_stage(stored, "replan_feedback", "replan_base") == options_with_stage(
        clean, clarify_questions=["Which country?"])
    with pytest.raises(KeyError):
        options_with_stage(clean, runs=3)  # type: ignore[call-arg]  # a user option is not stage data
    with pytest.raises(KeyError):
        options_without_stage(stored, "style")
    assert not USER_OPTION_KEYS & STAGE_DATA_KEYS


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["depth", "runs", "max_steps", "style", "web", "kb", "outputs", "engine"]),
                       st.one_of(st.none(), st.booleans(), st.integers(-3, 20), st.text(max_size=8),
                                 st.lists(st.text(max_size=5), max_size=3)), max_size=5))
def test_the_validator_normalises_or_refuses(options):
    """Whatever comes in: a clean, fully typed set of options, or a ValidationError with words (never a crash)."""
    try:
        clean = job_options_clean(options)
    except ValidationError as exc:
        assert all(m.strip() for m in exc.messages)
        return
    assert set(clean) == USER_OPTION_KEYS
    assert clean["outputs"][0] == "md" and isinstance(clean["max_steps"], int)
    assert clean["runs"] == 1 if clean["depth"] == "standard" else 1 <= clean["runs"] <= 5
    assert clean["kb"] is None or (isinstance(clean["kb"], int) and not isinstance(clean["kb"], bool))
