"""Job files through Django's storage API: the same code paths on the local disk and on an S3-compatible server
(moto's server mode over HTTP on 127.0.0.1)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from django.core.files.storage import default_storage
from django.test import Client

from research.jobs import selectors, services, storage
from research.jobs.artifacts import artifact_save_bytes, artifact_save_file
from research.runtime import free_port

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def s3_url(tmp_path_factory) -> Iterator[str]:
    port = free_port()
    log = tmp_path_factory.mktemp("s3") / "moto.log"
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(url, timeout=1)
            break
        except httpx.HTTPError:
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
    yield url
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture(params=["filesystem", "s3"])
def backend(request, settings, tmp_path) -> str:
    settings.MEDIA_ROOT = tmp_path / "media"
    if request.param == "s3":
        from django.core.management import call_command

        url = request.getfixturevalue("s3_url")
        bucket = f"b{os.getpid()}-{time.time_ns()}"
        settings.STORAGES = {**settings.STORAGES, "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {"bucket_name": bucket, "endpoint_url": url, "access_key": "k", "secret_key": "s",
                        "region_name": "us-east-1", "addressing_style": "path", "file_overwrite": True,
                        "default_acl": None}}}
        call_command("storage_init")
    return str(request.param)


def test_keys_stay_inside_the_job_folder():
    assert storage.artifact_key(7, "figures/s1-plot.png") == "jobs/7/figures/s1-plot.png"
    for bad in ("../x", "a/../../x", "/etc/passwd", "", "a//b", "a\\..\\b", "./x"):
        with pytest.raises(ValueError):
            storage.artifact_key(7, bad)
    assert storage.key_in_job("jobs/7/report.md", 7)
    assert not storage.key_in_job("jobs/70/report.md", 7) and not storage.key_in_job("jobs/7/../8/x", 7)


def test_save_overwrite_download_and_delete(backend, alice, tmp_path):
    job = services.job_create(user=alice, question="What do heat pumps cost?", options={})
    art = artifact_save_bytes(job=job, kind="md", name="report.md", data=b"# First\n")
    local = tmp_path / "fig.png"
    local.write_bytes(b"\x89PNG fake figure bytes")
    artifact_save_file(job=job, kind="figure", name="figures/s1-fig.png", path=local)
    art = artifact_save_bytes(job=job, kind="md", name="report.md", data=b"# Second version\n")  # re-render
    assert art.file.name == f"jobs/{job.pk}/report.md"  # replaced in place, not renamed
    assert art.sha256 == hashlib.sha256(b"# Second version\n").hexdigest() and art.size == 17

    got, handle = selectors.artifact_open_for_download(user=alice, job_id=job.pk, name="report.md")
    with handle:
        assert handle.read() == b"# Second version\n"
    assert storage.files_list(job.pk) == [f"jobs/{job.pk}/figures/s1-fig.png", f"jobs/{job.pk}/report.md"]

    fetched = storage.files_fetch(job.pk, tmp_path / "render")  # what a render worker gets: only figures
    assert (fetched / "figures" / "s1-fig.png").read_bytes() == local.read_bytes()
    assert not (fetched / "report.md").exists()

    location = selectors.artifact_map(job=job)["md"]
    assert location.startswith("s3://") if backend == "s3" else Path(location).is_file()

    job_id = job.pk
    services.job_cancel(job=job)
    job.refresh_from_db()
    services.job_delete(job=job)
    assert storage.files_list(job_id) == []
    assert not default_storage.exists(f"jobs/{job_id}/report.md")


def test_an_empty_render_is_refused(backend, alice):
    job = services.job_create(user=alice, question="What do heat pumps cost?", options={})
    with pytest.raises(RuntimeError, match="came out empty"):
        artifact_save_bytes(job=job, kind="pdf", name="report.pdf", data=b"")
    assert not job.artifacts.exists()


def test_downloads_stream_from_s3_with_owner_checks(backend, alice, alice_client, charlie):
    job = services.job_create(user=alice, question="What do heat pumps cost?", options={})
    artifact_save_bytes(job=job, kind="md", name="report.md", data=b"# Report\n" * 1000)
    response = alice_client.get(f"/jobs/{job.pk}/files/report.md")
    assert response.status_code == 200 and response["Content-Disposition"].startswith("attachment")
    assert b"".join(response.streaming_content) == b"# Report\n" * 1000
    outsider = Client()
    outsider.force_login(charlie)
    assert outsider.get(f"/jobs/{job.pk}/files/report.md").status_code == 404
    assert alice_client.get(f"/jobs/{job.pk}/files/missing.md").status_code == 404


def test_a_worker_scratch_dir_is_its_own_and_is_removed(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    with storage.work_dir("render-1-pdf") as one, storage.work_dir("render-1-pdf") as two:
        assert one != two and one.is_dir() and str(os.getpid()) in one.name
        (one / "report.pdf").write_bytes(b"x")
    assert not one.exists() and not two.exists()


_DIE_IN_A_WORK_DIR = """
import os, signal, sys
import django
django.setup()
from research.jobs import storage
with storage.work_dir("render-7-pdf") as tmp:
    (tmp / "half.pdf").write_bytes(b"%PDF-1.7 half a render")
    print(tmp, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
"""


def _killed_render(media: Path) -> Path:
    """A process that dies (kill -9) inside its work folder, as a worker killed mid-render; the folder it left."""
    env = dict(os.environ, OUTPUTS_DIR=str(media), DJANGO_SETTINGS_MODULE="research.settings")
    proc = subprocess.run([sys.executable, "-c", _DIE_IN_A_WORK_DIR], env=env, capture_output=True, text=True,
                          timeout=120, cwd=Path(__file__).resolve().parents[2])
    assert proc.returncode == -9, proc.stderr[-2000:]
    left = Path(proc.stdout.strip())
    assert left.is_dir() and (left / "half.pdf").exists() and left.parent == media / ".work"
    return left


def test_the_work_dir_of_a_killed_unit_is_removed_by_the_next_one_on_the_host(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    left = _killed_render(tmp_path)
    with storage.work_dir("render-7-pptx") as busy:  # a live unit's folder is never touched
        assert not left.exists(), "the next unit to open a work folder sweeps the dead one's"
        assert storage.work_dirs_sweep() == [] and busy.is_dir()
    assert list((tmp_path / ".work").iterdir()) == []


def test_the_reaper_removes_work_dirs_of_dead_units_and_old_orphans(settings, tmp_path):
    from research.jobs.units.reaper import reap_stale_work

    settings.MEDIA_ROOT = tmp_path
    left = _killed_render(tmp_path)
    # A folder with no lock file (made by an older version, or a process killed before it locked): removed
    # only once it is older than any unit may run (the hard time limit).
    young, old = tmp_path / ".work" / "render-1-pdf-young", tmp_path / ".work" / "render-1-pdf-old"
    young.mkdir()
    old.mkdir()
    past = time.time() - settings.CELERY_TASK_TIME_LIMIT - 60
    os.utime(old, (past, past))
    assert reap_stale_work()["work_dirs"] == 2
    assert not left.exists() and not old.exists() and young.is_dir()


def test_previews_are_stored_listed_replaced_and_deleted_with_the_job(backend, alice, alice_client, charlie,
                                                                      tmp_path):
    job = services.job_create(user=alice, question="What do heat pumps cost?", options={})
    pages = []
    for n in range(3):
        page = tmp_path / f"page-{n}.png"
        page.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes([n]) * 100)
        pages.append(page)
    assert storage.previews_replace(job.pk, "pdf", pages) == ["pdf-01.png", "pdf-02.png", "pdf-03.png"]
    storage.previews_replace(job.pk, "slide", pages[:2])
    assert storage.previews_list(job.pk) == ["pdf-01.png", "pdf-02.png", "pdf-03.png", "slide-01.png",
                                             "slide-02.png"]
    storage.previews_replace(job.pk, "pdf", pages[:1])  # a re-render with fewer pages leaves no stale ones
    assert storage.previews_list(job.pk, "pdf") == ["pdf-01.png"]

    response = alice_client.get(f"/jobs/{job.pk}/previews/slide-02.png")
    assert response.status_code == 200 and response["Content-Type"] == "image/png"
    assert b"".join(response.streaming_content) == pages[1].read_bytes()
    assert alice_client.get(f"/jobs/{job.pk}/previews/pdf-02.png").status_code == 404  # replaced away
    assert alice_client.get(f"/jobs/{job.pk}/previews/..%2Freport.md").status_code == 404
    outsider = Client()
    outsider.force_login(charlie)
    assert outsider.get(f"/jobs/{job.pk}/previews/slide-01.png").status_code == 404

    job_id = job.pk
    job.status = "done"
    job.save(update_fields=["status"])
    services.job_delete(job=job)
    assert storage.previews_list(job_id) == [] and storage.files_list(job_id) == []


def test_the_job_page_reads_chapters_and_thumbnails_without_opening_the_files(backend, alice, alice_client,
                                                                            tmp_path):
    """Chapters come from the podcast's Artifact.meta (written by the render): the MP3 here is not even an
    MP3, so a page that opened it would find nothing."""
    from research.jobs.web.media import job_media

    job = services.job_create(user=alice, question="What do heat pumps cost?", options={})
    chapters = [{"start": 0.0, "end": 61.5, "title": "Costs"}, {"start": 61.5, "end": 130.0, "title": "Outlook"}]
    artifact_save_bytes(job=job, kind="podcast", name="podcast.mp3", data=b"not an mp3")
    job.artifacts.filter(name="podcast.mp3").update(meta={"chapters": chapters, "duration_s": 130.0})
    artifact_save_bytes(job=job, kind="pdf", name="report.pdf", data=b"not a pdf")
    artifact_save_bytes(job=job, kind="pptx", name="slides.pptx", data=b"not a deck")
    job.artifacts.filter(name="slides.pptx").update(meta={"slide_titles": ["Title", "Costs"]})
    media = job_media(job=job)
    assert media["podcast"]["chapters"] == [{"start": 0.0, "clock": "0:00", "title": "Costs"},
                                            {"start": 61.5, "clock": "1:01", "title": "Outlook"}]
    assert media["pdf"] == [] and media["slides"] == [] and media["slide_titles"] == ["Title", "Costs"]
    thumb = tmp_path / "thumb.png"
    thumb.write_bytes(b"\x89PNG\r\n\x1a\nthumb")
    storage.previews_replace(job.pk, "pdf", [thumb])
    assert job_media(job=job)["pdf"] == [f"/jobs/{job.pk}/previews/pdf-01.png"]
    html = alice_client.get(f"/jobs/{job.pk}/").content.decode()
    assert "Outlook" in html and f"/jobs/{job.pk}/previews/pdf-01.png" in html
