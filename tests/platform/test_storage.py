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
