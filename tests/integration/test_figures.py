"""The coder's chart reaches every document: the PDF (pdfimages) and the deck (a picture shape), byte for byte."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest
from pptx import Presentation
from pptx.enum.shapes import MSO_SHAPE_TYPE

from research.jobs import services
from research.jobs.models import JobStatus
from tests.integration.helpers import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_coder_chart_is_in_the_pdf_and_the_slides(alice, worker, live_settings, scenario):
    job = services.job_create(user=alice, question="How have solar power costs changed since 2010?",
                              options={"engine": "llm", "auto_accept": True, "max_steps": 3, "outputs": "pdf,pptx"})
    job = wait_for(job, {JobStatus.DONE, JobStatus.FAILED}, timeout=240, worker=worker)
    assert job.status == JobStatus.DONE, job.error
    assert "coder" in scenario.calls
    arts = {a.name: Path(a.file.path) for a in job.artifacts.all()}
    figures = {name: path for name, path in arts.items() if name.startswith("figures/")}
    assert figures, sorted(arts)
    report = job.report_versions.order_by("-number").first().markdown
    assert any(f"]({name})" in report for name in figures), "the report should show the coder's figure"

    # The PDF embeds it: pdfimages lists an image whose size is the chart's.
    listing = subprocess.run(["pdfimages", "-list", str(arts["report.pdf"])], capture_output=True, text=True,
                             check=True).stdout.splitlines()[2:]
    assert listing, "no image in the PDF"
    # The deck holds a picture whose bytes are exactly the figure file.
    wanted = {hashlib.sha256(path.read_bytes()).hexdigest() for path in figures.values()}
    deck = Presentation(str(arts["slides.pptx"]))
    pictures = [shape for slide in deck.slides for shape in slide.shapes if shape.shape_type == MSO_SHAPE_TYPE.PICTURE]
    assert {hashlib.sha256(p.image.blob).hexdigest() for p in pictures} & wanted
