"""Job files through Django's default storage: the local disk or an S3-compatible bucket (settings.STORAGES).

Every file of a job lives under the key `jobs/<job id>/<name>`. Processes never hand each other a local
path: a worker renders into its own temp dir (`work_dir`), uploads the result (`file_store`), and another
worker or the web server reads it back by key (`file_open`, `files_fetch`).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import tempfile
import time
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


PREVIEWS = "previews/"  # thumbnails for the job page (not downloads): pdf-NN.png, slide-NN.png


def file_delete(key: str) -> None:
    default_storage.delete(key)


def previews_list(job_id: int, kind: str = "") -> list[str]:
    """Names of the job's stored thumbnails (pdf-01.png, slide-01.png, …), of one `kind` if given, in order."""
    prefix = job_prefix(job_id) + PREVIEWS
    try:
        _dirs, files = default_storage.listdir(prefix)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(n for n in files if n.endswith(".png") and n.startswith(f"{kind}-" if kind else ""))


def slide_previews_list(job_id: int) -> list[str]:
    """Names (slide-01.png, …) of the stored slide thumbnails, in slide order."""
    return previews_list(job_id, "slide")


def previews_replace(job_id: int, kind: str, pages: list[Path]) -> list[str]:
    """Store `pages` as `<kind>-01.png`, … (in order), replacing the kind's previous thumbnails."""
    names = [f"{kind}-{n:02d}.png" for n in range(1, len(pages) + 1)]
    for name in previews_list(job_id, kind):
        if name not in names:  # a re-render may have fewer pages
            file_delete(artifact_key(job_id, PREVIEWS + name))
    for name, page in zip(names, pages, strict=True):
        file_store(key=artifact_key(job_id, PREVIEWS + name), path=page)
    return names


def files_delete(job_id: int) -> None:
    """Remove every file of the job (and, on the local disk, its folders)."""
    for key in files_list(job_id):
        default_storage.delete(key)
    try:
        root = Path(default_storage.path(job_prefix(job_id)))
    except NotImplementedError:  # object storage has no folders to remove
        return
    shutil.rmtree(root, ignore_errors=True)


def file_location(key: str) -> str:
    """Where an operator finds the file: the local path, or s3://bucket/key (for the CLI's --json)."""
    try:
        return str(default_storage.path(key))
    except NotImplementedError:
        bucket = getattr(getattr(default_storage, "bucket", None), "name", "")
        return f"s3://{bucket}/{key}" if bucket else key


WORK = ".work"
_OWNER = ".owner"  # inside each work folder: locked (flock) by the process that uses it, for as long as it does


def work_base() -> Path:
    return Path(settings.MEDIA_ROOT) / WORK


@contextmanager
def work_dir(prefix: str) -> Iterator[Path]:
    """This process's own scratch folder (under OUTPUTS_DIR/.work), removed afterwards; never shared.

    The folder holds a lock file that this process keeps locked while it works; a process that dies
    (kill -9) drops the lock, so the next unit that opens a work folder on this host, or the reaper,
    removes what it left (work_dirs_sweep).
    """
    base = work_base()
    base.mkdir(parents=True, exist_ok=True)
    work_dirs_sweep()
    path = Path(tempfile.mkdtemp(dir=base, prefix=f"{prefix}-{os.getpid()}-"))
    owner = os.open(path / _OWNER, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(owner, fcntl.LOCK_EX)  # blocking: a sweeper may hold it for an instant while it looks
        os.write(owner, str(os.getpid()).encode())  # written under the lock: a sweeper skips an unwritten one
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        os.close(owner)


def work_dirs_sweep(*, orphan_age_s: float | None = None) -> list[str]:
    """Remove this host's work folders whose process is gone; returns their names.

    A folder whose lock file is written but no longer locked belongs to a dead process. A folder with no
    lock file at all (or one never written) is removed once it is older than the longest a unit may run
    (the hard time limit), so a process killed between making the folder and locking it is also cleaned.
    """
    base = work_base()
    try:
        entries = list(os.scandir(base))
    except FileNotFoundError:
        return []
    age_limit = orphan_age_s if orphan_age_s is not None else float(settings.CELERY_TASK_TIME_LIMIT or 3600)
    removed = []
    for entry in entries:
        if not entry.is_dir(follow_symlinks=False):
            continue
        if _work_dir_abandoned(Path(entry.path), age_limit):
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(entry.name)
    return removed


def _work_dir_abandoned(path: Path, age_limit: float) -> bool:
    try:
        fd = os.open(path / _OWNER, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        try:
            return time.time() - path.stat().st_mtime > age_limit
        except FileNotFoundError:
            return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # its process is alive and working
        if os.fstat(fd).st_size > 0:
            return True  # locked once, unlocked now: the process died
        return time.time() - path.stat().st_mtime > age_limit
    finally:
        os.close(fd)  # drops our lock
