"""Output formats come from one registry (research/render/formats/): a format registered in a test shows up
in every list of outputs and is rendered by the render unit and the `render` command, with no other edit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.test import Client

from research.api.schemas import JobCreateIn
from research.jobs import dispatch, services
from research.jobs.artifacts import artifact_save_file
from research.jobs.models import OutputRender, OutputStatus
from research.jobs.templatetags.jobs_ui import output_short_labels
from research.jobs.units import renders
from research.jobs.web.forms import JobCreateForm
from research.render.formats import (
    FORMATS,
    OutputFile,
    OutputFormat,
    Rendered,
    RenderRequest,
    output_kinds,
    register,
    rendered_kinds,
)


def _render_txt(req: RenderRequest) -> Rendered:
    out = req.path(FORMATS["txt"], FORMATS["txt"].files[0])
    out.write_text(req.markdown.upper(), encoding="utf-8")
    return Rendered([out], meta={"chars": len(req.markdown)})


@pytest.fixture
def txt_format(monkeypatch):
    """A tiny output format, registered the way a format module registers itself."""
    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: None)
    saved = dict(FORMATS)
    register(OutputFormat(kind="txt", label="Plain text", short_label="text", basename="notes",
                          files=(OutputFile("txt", ".txt", "text/plain"),), render=_render_txt, order=40))
    yield FORMATS["txt"]
    FORMATS.clear()
    FORMATS.update(saved)


def test_the_built_in_formats_in_order():
    assert output_kinds() == ("md", "pdf", "pptx", "podcast")
    assert rendered_kinds() == ("pdf", "pptx", "podcast")
    podcast = FORMATS["podcast"]
    assert [podcast.file_name(f) for f in podcast.files] == ["podcast.mp3", "podcast.txt", "podcast.vtt"]
    assert [f.inline for f in podcast.files] == [True, False, False]


def test_a_registered_format_is_in_every_list(txt_format):
    assert ("txt", "Plain text") in JobCreateForm().fields["outputs"].choices
    assert services.job_options_clean({"outputs": ["txt", "pdf"]})["outputs"] == ["md", "pdf", "txt"]
    assert JobCreateIn(question="q", outputs=["md", "txt"]).outputs == ["md", "txt"]
    assert ("txt", "text") in output_short_labels()
    doc = Client().get("/api/v1/openapi.json").json()
    assert "txt" in doc["components"]["schemas"]["JobCreateIn"]["properties"]["outputs"]["items"]["enum"]


def test_an_unregistered_format_is_refused():
    with pytest.raises(ValidationError, match="docx"):
        services.job_options_clean({"outputs": ["docx"]})
    with pytest.raises(ValueError, match="unknown output 'docx'"):
        JobCreateIn(question="q", outputs=["docx"])


@pytest.mark.django_db
def test_the_render_unit_dispatches_to_a_registered_format(txt_format, alice, alice_client, tmp_path):
    """The render unit's dispatch (the lease around it is the same for every kind: tests/integration)."""
    job = services.job_create(user=alice, question="q?", options={"engine": "offline", "outputs": ["txt"]})
    made = renders._render(job, "txt", "# Title\n\nbody", tmp_path)
    assert [(kind, name) for kind, name, _path in made.files] == [("txt", "notes.txt")]
    assert made.meta == {"notes.txt": {"chars": 13}} and made.previews == {}
    for kind, name, path in made.files:
        art = artifact_save_file(job=job, kind=kind, name=name, path=path, meta=made.meta.get(name, {}))
    OutputRender.objects.filter(job=job, kind="txt").update(status=OutputStatus.DONE)
    page = alice_client.get(f"/jobs/{job.pk}/").content.decode()
    assert "Plain text" in page and "notes.txt" in page
    response = alice_client.get(f"/jobs/{job.pk}/files/{art.name}")
    assert response["Content-Type"] == "text/plain"
    assert b"".join(response.streaming_content) == b"# TITLE\n\nBODY"


def test_the_render_command_renders_a_registered_format(txt_format, tmp_path: Path, capsys):
    report = tmp_path / "r.md"
    report.write_text("# T\n\nx", encoding="utf-8")
    call_command("render", str(report), formats="txt", out=str(tmp_path / "out"))
    assert (tmp_path / "out" / "r.txt").read_text(encoding="utf-8") == "# T\n\nX"
    assert json.dumps(str(tmp_path / "out" / "r.txt"))[1:-1] in capsys.readouterr().out
