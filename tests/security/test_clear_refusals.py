"""Refusals say why: an upload with no file, and a plan post with more fields than Django reads."""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = [pytest.mark.django_db]


def test_upload_without_a_file_says_so(alice_client, alice_objects):
    url = f"/kb/{alice_objects['collection_id']}/upload/"
    response = alice_client.post(url, {}, follow=True)
    assert "Choose at least one file." in response.content.decode()


def test_an_oversized_plan_post_gets_a_readable_400(alice, alice_objects, settings):
    settings.DEBUG = False
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    token = "a" * 32
    client.cookies["csrftoken"] = token
    fields = {"op": "accept", "csrfmiddlewaretoken": token}
    for n in range(500):  # a 500-step plan: ~5 fields a step
        fields.update({f"form-{n}-title": f"Step {n}", f"form-{n}-description": "d", f"form-{n}-type": "research",
                       f"form-{n}-id": f"s{n}", f"form-{n}-depends_on": ""})
    response = client.post(f"/jobs/{alice_objects['job_id']}/plan/", fields)
    body = response.content.decode()
    assert response.status_code == 400
    assert "more than 1000 fields" in body and "at most" in body and "steps" in body


def test_a_report_edit_too_costly_to_render_is_refused_before_rendering(alice, alice_client, monkeypatch):
    from research.jobs import services
    from research.jobs.models import JobStatus, ResearchJob
    from research.jobs.web import views

    job = services.job_create(user=alice, question="What is the state of heat pumps?", options={"engine": "offline"})
    services.report_version_create(job=job, markdown="# R\n\nHeat pumps move heat.\n", author="reporter")
    ResearchJob.objects.filter(pk=job.pk).update(status=JobStatus.DONE)
    rendered: list[int] = []
    real = views.markdown_to_html
    monkeypatch.setattr(views, "markdown_to_html", lambda text, **kw: rendered.append(len(text)) or real(text, **kw))
    attack = "# R\n\n" + "![" * 20_000  # ~1.3 s of rendering here; 250,000 of them would be ~17 s

    response = alice_client.post(f"/jobs/{job.pk}/report/edit/", {"markdown": attack})
    body = response.content.decode()
    assert response.status_code == 400
    assert "The report has 20000 “[” characters; at most 10000 are accepted." in body
    assert job.report_versions.count() == 1  # nothing saved
    preview = alice_client.post(f"/jobs/{job.pk}/report/preview/", {"markdown": attack}).json()
    assert preview == {"html": "", "problem": "The report has 20000 “[” characters; at most 10000 are accepted."}
    assert all(n < 1000 for n in rendered), rendered  # the attack text itself was never rendered

    fine = "# R\n\nHeat pumps move heat [1].\n" + "- [x] item\n" * 100
    assert alice_client.post(f"/jobs/{job.pk}/report/preview/", {"markdown": fine}).json()["html"]
