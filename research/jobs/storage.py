"""Job files through Django's default storage: the local disk or an S3-compatible bucket (settings.STORAGES).

Every file of a job lives under the key `jobs/<job id>/<name>`. Processes never hand each other a local
path: a worker renders into its own temp dir (`work_dir`), uploads the result (`file_store`), and another
worker or the web server reads it back by key (`file_open`, `files_fetch`).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import IO

from django.conf import settings
from django.core.files import File
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage


def job_prefix(job_id: int) -> str:
    return f"jobs/{int(job_id)}/"


def artifact_key(job_id: int, name: str) -> str:
    """The storage key of a job's file; `name` is relative (e.g. "figures/s1-plot.png") and may not escape."""
    parts = name.split("/")
    if any(p in ("", ".", "..") for p in parts) or "\\" in name or "\x00" in name:
        raise ValueError(f"bad file name {name!r}")
    return job_prefix(job_id) + name


def key_in_job(key: str, job_id: int) -> bool:
    """True for a key inside the job's folder (what a download may serve)."""
    prefix = job_prefix(job_id)
    if not key.startswith(prefix):
        return False
    try:
        return artifact_key(job_id, key[len(prefix):]) == key
    except ValueError:
        return False


def file_store(*, key: str, data: bytes | None = None, path: Path | None = None) -> tuple[int, str]:
    """Upload bytes or a local file under `key`, replacing what was there. Returns (size, sha256).

    An empty result is refused: a renderer that made nothing failed, it did not succeed with nothing.
    """
    if (data is None) == (path is None):
        raise TypeError("give data or path")
    digest = hashlib.sha256()
    if data is not None:
        digest.update(data)
        size = len(data)
        content: File[bytes] = ContentFile(data)
    else:
        assert path is not None
        with path.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
        size = path.stat().st_size
    if size == 0:
        raise RuntimeError(f"{PurePosixPath(key).name} came out empty")
    if path is not None:
        with path.open("rb") as handle:
            saved = default_storage.save(key, File(handle, name=path.name))
    else:
        saved = default_storage.save(key, content)
    if saved != key:  # the storage renamed it: overwriting is off, which would orphan the old record
        default_storage.delete(saved)
        raise RuntimeError(f"storage stored {key} as {saved}: enable overwriting for the default storage")
    return size, digest.hexdigest()


def file_open(key: str) -> IO[bytes]:
    """A binary file object for a stored key (streams from S3; a plain file on disk)."""
    return default_storage.open(key, "rb")  # type: ignore[no-any-return]


def _walk(prefix: str) -> Iterator[str]:
    try:
        dirs, files = default_storage.listdir(prefix)
    except (FileNotFoundError, NotADirectoryError):
        return
    for name in files:
        yield prefix + name
    for sub in dirs:
        yield from _walk(f"{prefix}{sub}/")


def files_list(job_id: int) -> list[str]:
    return sorted(_walk(job_prefix(job_id)))


def files_fetch(job_id: int, dest: Path, *, under: str = "figures/") -> Path:
    """Download the job's files below `under` into dest (same relative layout); returns dest."""
    for key in files_list(job_id):
        rel = key[len(job_prefix(job_id)):]
        if not rel.startswith(under):
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        with file_open(key) as source, target.open("wb") as out:
            for chunk in iter(lambda: source.read(1 << 20), b""):
                out.write(chunk)
    return dest


SLIDE_PREVIEWS = "previews/"  # the deck's slide-NN.png thumbnails for the job page (not downloads)


def file_delete(key: str) -> None:
    default_storage.delete(key)


def slide_previews_list(job_id: int) -> list[str]:
    """Names (slide-01.png, …) of the stored slide thumbnails, in slide order."""
    prefix = job_prefix(job_id) + SLIDE_PREVIEWS
    return sorted(k[len(prefix):] for k in files_list(job_id)
                  if k.startswith(prefix + "slide-") and "/" not in k[len(prefix):] and k.endswith(".png"))


def files_delete(job_id: int) -> None:
    """Remove every file of the job (and, on the local disk, its folders)."""
    for key in files_list(job_id):
        default_storage.delete(key)
    try:
        root = Path(default_storage.path(job_prefix(job_id)))
    except NotImplementedError:  # object storage has no folders to remove
        return
    import shutil

    shutil.rmtree(root, ignore_errors=True)


def file_location(key: str) -> str:
    """Where an operator finds the file: the local path, or s3://bucket/key (for the CLI's --json)."""
    try:
        return str(default_storage.path(key))
    except NotImplementedError:
        bucket = getattr(getattr(default_storage, "bucket", None), "name", "")
        return f"s3://{bucket}/{key}" if bucket else key


@contextmanager
def work_dir(prefix: str) -> Iterator[Path]:
    """This process's own scratch folder (under OUTPUTS_DIR/.work), removed afterwards; never shared."""
    base = Path(settings.MEDIA_ROOT) / ".work"
    base.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=base, prefix=f"{prefix}-{os.getpid()}-") as tmp:
        yield Path(tmp)
