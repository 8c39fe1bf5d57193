"""Two web hosts and two workers as four hosts (own code checkout, own OUTPUTS_DIR) over one PostgreSQL, one
Redis and one S3-compatible server: a whole job's four outputs download through the web host, every preview
on the job page answers from either web host (no shared disk, no sticky sessions), and a worker host
killed with SIGKILL mid-job leaves its work to the other."""

from __future__ import annotations

import io
import re
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest
from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import User
from django.db import connection

from research.jobs import services
from research.jobs.models import JobStatus, JobStep, ResearchJob
from tests.faults.stack import QUESTION, check_event_log, wait_job, wait_until
from tests.scale.conftest import Hosts

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
OUTPUTS = ["md", "pdf", "pptx", "podcast"]
FILES = {"report.md", "report.pdf", "slides.pptx", "podcast.mp3"}


@pytest.fixture(autouse=True)
def _postgres_only() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("several hosts need a shared server database: run with TEST_DATABASE=postgres (make test)")


def sign_in(web_url: str) -> httpx.Client:
    """alice signs in through the web host's login form (a real session, CSRF included)."""
    User.objects.create(username="alice", email="alice@example.com",
                        password=make_password("alice-pass-123", hasher="pbkdf2_sha256"))
    client = httpx.Client(base_url=web_url, timeout=60, follow_redirects=False)
    page = client.get("/accounts/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert token, page.text[:500]
    done = client.post("/accounts/login/", data={"username": "alice", "password": "alice-pass-123",
                                                 "csrfmiddlewaretoken": token.group(1)})
    assert done.status_code == 302, done.text[:500]
    return client


def check_downloads(client: httpx.Client, job: ResearchJob, tmp: Path) -> None:
    """Each output, fetched from the web host, is a real file of its kind."""
    from pptx import Presentation

    got = {}
    for name in sorted(FILES):
        response = client.get(f"/jobs/{job.pk}/files/{name}")
        assert response.status_code == 200, (name, response.status_code, response.text[:300])
        assert "attachment" in response.headers.get("content-disposition", "")
        got[name] = response.content
        (tmp / name).write_bytes(response.content)
    assert "# " in got["report.md"].decode() and "[1]" in got["report.md"].decode()
    text = subprocess.run(["pdftotext", str(tmp / "report.pdf"), "-"], capture_output=True, text=True, check=True)
    assert len(text.stdout.split()) > 100
    deck = Presentation(io.BytesIO(got["slides.pptx"]))
    assert len(deck.slides) >= 3
    probe = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0",
                            str(tmp / "podcast.mp3")], capture_output=True, text=True, check=True)
    assert float(probe.stdout.strip()) > 5
    for art in job.artifacts.all():  # the stored size and hash match what the web host served
        if art.name in got:
            assert art.size == len(got[art.name]), art.name


def check_previews_on_both_web_hosts(client: httpx.Client, hosts: Hosts, job: ResearchJob) -> None:
    """The job page is rendered by the first web host only; every thumbnail URL it lists (PDF pages, slides)
    answers 200 with a PNG from the second one, which never rendered the page, and then from the first.
    The second host's page lists the same thumbnails and the podcast's chapters."""
    assert hosts.web is not None and hosts.web2 is not None

    def listed(base: str) -> list[str]:
        page = client.get(f"{base}/jobs/{job.pk}/")
        assert page.status_code == 200, page.text[:300]
        assert 'class="chapter"' in page.text, "the podcast's chapters are listed"
        return sorted(set(re.findall(rf'src="(/jobs/{job.pk}/previews/[^"]+)"', page.text)))

    urls = listed(hosts.web.url)
    assert [u for u in urls if "/pdf-" in u], urls
    if shutil.which("soffice") or shutil.which("libreoffice"):
        assert [u for u in urls if "/slide-" in u], urls
    for url in urls:
        for base in (hosts.web2.url, hosts.web.url):
            response = client.get(base + url)
            assert response.status_code == 200, (base, url, response.status_code)
            assert response.content.startswith(b"\x89PNG\r\n\x1a\n"), (base, url)
    assert listed(hosts.web2.url) == urls


def test_a_whole_job_runs_across_hosts_and_downloads_through_the_web_host(hosts: Hosts, s3_server, tmp_path):
    client = sign_in(hosts.web.url)  # type: ignore[union-attr]
    job = services.job_create(user=User.objects.get(username="alice"), question=QUESTION,
                              options={"engine": "llm", "auto_accept": True, "outputs": OUTPUTS, "max_steps": 3})
    job = wait_job(job, {JobStatus.DONE, JobStatus.FAILED}, timeout=240, stack=hosts.stack)
    assert job.status == JobStatus.DONE, job.error
    check_event_log(job)
    check_downloads(client, job, tmp_path)

    # Every preview on the job page answers 200 from either web host, whichever one rendered the page.
    check_previews_on_both_web_hosts(client, hosts, job)

    # The files live in the bucket, not on any host's disk (temp folders are cleaned up).
    keys = s3_server.keys()
    assert {f"jobs/{job.pk}/{name}" for name in FILES} <= keys, keys
    assert any(k.startswith(f"jobs/{job.pk}/previews/pdf-") for k in keys), keys
    assert hosts.local_files() == {h.name: [] for h in [hosts.web_dir, hosts.web2_dir, *hosts.worker_dirs]}

    # Work really was spread: both worker hosts ran tasks of this job.
    for worker in hosts.workers:
        assert "succeeded" in worker.log.read_text(errors="replace"), worker.name

    # Owner checks hold on the storage path too: another user gets 404.
    User.objects.create(username="charlie", password=make_password("charlie-pass-123", hasher="pbkdf2_sha256"))
    outsider = httpx.Client(base_url=hosts.web.url, timeout=30)  # type: ignore[union-attr]
    page = outsider.get("/accounts/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert token
    outsider.post("/accounts/login/", data={"username": "charlie", "password": "charlie-pass-123",
                                            "csrfmiddlewaretoken": token.group(1)})
    assert outsider.get(f"/jobs/{job.pk}/files/report.pdf").status_code == 404
    assert outsider.get(f"/jobs/{job.pk}/previews/pdf-01.png").status_code == 404

    # Deleting the job (through the second web host) deletes its thumbnails with its files.
    page = client.get(f"{hosts.web2.url}/jobs/{job.pk}/")  # type: ignore[union-attr]
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert token
    done = client.post(f"{hosts.web2.url}/jobs/{job.pk}/delete/",  # type: ignore[union-attr]
                       data={"csrfmiddlewaretoken": token.group(1)}, headers={"Referer": hosts.web2.url + "/"})
    assert done.status_code == 302, done.text[:300]
    assert not [k for k in s3_server.keys() if k.startswith(f"jobs/{job.pk}/")]


def test_a_worker_host_killed_mid_job_leaves_its_work_to_the_other(hosts: Hosts, tmp_path):
    client = sign_in(hosts.web.url)  # type: ignore[union-attr]
    director = hosts.stack.director
    director.record_pids = True
    director.plan([{"id": "s1"}, {"id": "s2"}])
    held = director.gate("researcher", "s1")
    job = services.job_create(user=User.objects.get(username="alice"), question=QUESTION,
                              options={"engine": "llm", "auto_accept": True, "outputs": OUTPUTS, "max_steps": 2})
    held.wait_arrival()
    first = director.starts("s1")[0]
    doomed = next(w for w in hosts.workers if first.pid in w.pids())
    survivor = next(w for w in hosts.workers if w is not doomed)
    doomed.kill()  # SIGKILL to the whole worker host: parent and pool children
    held.open()

    job = wait_job(job, {JobStatus.DONE, JobStatus.FAILED}, timeout=240, stack=hosts.stack)
    assert job.status == JobStatus.DONE, job.error
    starts = director.starts("s1")
    assert len(starts) == 2 and starts[1].pid in survivor.pids(), starts
    assert JobStep.objects.get(job=job, step_id="s1").attempts == 2
    check_event_log(job)
    check_downloads(client, job, tmp_path)
    wait_until(lambda: not doomed.running, timeout=10, what="the killed worker to be gone")
