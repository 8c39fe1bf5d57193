"""A job's folder on disk and the files saved in it. The only code that builds the folder's path."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from django.conf import settings

from research.jobs.models import Artifact, ResearchJob


def job_dir_path(job_id: int) -> Path:
    """MEDIA_ROOT/jobs/<id>: where the job's artifacts and figures live (not created)."""
    return Path(settings.MEDIA_ROOT) / "jobs" / str(job_id)


def job_dir(job_id: int) -> Path:
    """The job's folder, created if missing."""
    path = job_dir_path(job_id)
    path.mkdir(parents=True, exist_ok=True)
    return path


def job_dir_remove(job_id: int) -> None:
    shutil.rmtree(job_dir_path(job_id), ignore_errors=True)


def artifact_save_file(*, job: ResearchJob, kind: str, name: str, path: Path) -> Artifact:
    """Move a rendered file into the job's folder atomically and record it."""
    target = job_dir(job.pk) / name
    target.parent.mkdir(parents=True, exist_ok=True)
    if path.resolve() != target.resolve():
        os.replace(path, target)
    data = target.read_bytes()
    if not data:
        raise RuntimeError(f"{name} came out empty")
    art, _ = Artifact.objects.update_or_create(
        job=job, name=name,
        defaults={"kind": kind, "file": f"jobs/{job.pk}/{name}", "size": len(data),
                  "sha256": hashlib.sha256(data).hexdigest()},
    )
    return art


def artifact_save_bytes(*, job: ResearchJob, kind: str, name: str, data: bytes) -> Artifact:
    folder = job_dir(job.pk)
    (folder / name).parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=(folder / name).parent, prefix=".tmp-")
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    return artifact_save_file(job=job, kind=kind, name=name, path=Path(tmp))
