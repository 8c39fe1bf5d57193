"""A job's files: saved to and removed from the storage (research/jobs/storage.py), recorded as Artifacts.

The files live in Django's default storage under jobs/<id>/ (local disk or an S3-compatible bucket); no
code outside research/jobs/storage.py builds a path or key for them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from research.jobs import storage
from research.jobs.models import Artifact, ResearchJob


def job_dir_remove(job_id: int) -> None:
    """Remove every stored file of the job."""
    storage.files_delete(job_id)


def _record(job: ResearchJob, kind: str, name: str, key: str, size: int, sha256: str,
            meta: dict[str, Any] | None = None) -> Artifact:
    art, _ = Artifact.objects.update_or_create(
        job=job, name=name,
        defaults={"kind": kind, "file": key, "size": size, "sha256": sha256, "meta": meta or {}},
    )
    return art


def artifact_save_file(*, job: ResearchJob, kind: str, name: str, path: Path,
                       meta: dict[str, Any] | None = None) -> Artifact:
    """Upload a file this worker made in its own temp dir, and record it (with `meta`, facts the job page
    shows without opening the file). An empty file is refused."""
    key = storage.artifact_key(job.pk, name)
    size, sha256 = storage.file_store(key=key, path=path)
    return _record(job, kind, name, key, size, sha256, meta)


def artifact_save_bytes(*, job: ResearchJob, kind: str, name: str, data: bytes) -> Artifact:
    key = storage.artifact_key(job.pk, name)
    size, sha256 = storage.file_store(key=key, data=data)
    return _record(job, kind, name, key, size, sha256)
