"""Several hosts on one machine: each app process runs from its own copy of the code with its own OUTPUTS_DIR,
and they share only PostgreSQL, Redis and an S3-compatible server (moto's server mode).

`make test` runs this package with TEST_DATABASE=postgres. The fault stack's fixtures (its own Redis, the
model double with a Director, the session worker paused) are reused from tests/faults/stack.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from research.runtime import free_port
from tests.faults.stack import (  # noqa: F401  (fixtures)
    Stack,
    fault_broker,
    fault_env,
    fault_llm,
    fault_redis,
    quiet_other_workers,
)
from tests.support.procs import ROOT, AsgiServer, BeatProcess, WorkerProcess

BUCKET = "research-scale"
S3_KEYS = {"S3_ACCESS_KEY_ID": "scale-test-key", "S3_SECRET_ACCESS_KEY": "scale-test-secret"}


class S3Server:
    """moto's S3-compatible server on a loopback port (its state lives in the process: one per session)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = Path(os.environ["TEST_RUN_DIR"]) / f"s3-{self.port}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> S3Server:
        self.proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                                     stdout=self.log.open("ab"), stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                httpx.get(self.url + "/", timeout=1)
                return self
            except httpx.HTTPError:
                if self.proc.poll() is not None:
                    raise RuntimeError(self.log.read_text(errors="replace")) from None
                time.sleep(0.2)
        raise RuntimeError("the S3 server did not start")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)

    def client(self) -> Any:
        import boto3

        return boto3.client("s3", endpoint_url=self.url, region_name="us-east-1",
                            aws_access_key_id=S3_KEYS["S3_ACCESS_KEY_ID"],
                            aws_secret_access_key=S3_KEYS["S3_SECRET_ACCESS_KEY"])

    def keys(self) -> set[str]:
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=BUCKET)
        return {obj["Key"] for page in pages for obj in page.get("Contents", [])}


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    server = S3Server().start()
    yield server
    server.stop()


def make_host(root: Path, name: str) -> Path:
    """A host: its own checkout of the app (code, templates, static files) and its own local disk."""
    host = root / name
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for part in ("research", "templates", "static", "locale"):
        shutil.copytree(ROOT / part, host / part, ignore=ignore)
    shutil.copy(ROOT / "manage.py", host / "manage.py")
    (host / "outputs").mkdir()
    return host


@dataclass
class Hosts:
    env: dict[str, str]
    stack: Stack
    web_dir: Path
    worker_dirs: list[Path]
    web2_dir: Path | None = None  # a second web host, as behind a load balancer without sticky sessions
    web: AsgiServer | None = None
    web2: AsgiServer | None = None
    workers: list[WorkerProcess] = field(default_factory=list)

    def host_env(self, host: Path) -> dict[str, str]:
        return dict(self.env, OUTPUTS_DIR=str(host / "outputs"))

    def start(self) -> None:
        done = subprocess.run([sys.executable, "manage.py", "storage_init"], cwd=self.web_dir,
                              env=self.host_env(self.web_dir), capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        self.stack.beats.append(BeatProcess(self.host_env(self.web_dir), cwd=self.web_dir).start())
        self.web = AsgiServer(self.host_env(self.web_dir), cwd=self.web_dir)
        self.stack.servers.append(self.web)
        self.web.start()
        if self.web2_dir is not None:
            self.web2 = AsgiServer(self.host_env(self.web2_dir), cwd=self.web2_dir)
            self.stack.servers.append(self.web2)
            self.web2.start()
        for index, host in enumerate(self.worker_dirs):
            worker = WorkerProcess(self.host_env(host), concurrency=2, name=f"host{index + 1}-{os.getpid()}",
                                   cwd=host)
            self.stack.workers.append(worker)
            self.workers.append(worker.start())

    def local_files(self) -> dict[str, list[str]]:
        """Every file left on each host's local disk (temp folders are expected to be gone)."""
        out: dict[str, list[str]] = {}
        for host in [self.web_dir, *([self.web2_dir] if self.web2_dir else []), *self.worker_dirs]:
            out[host.name] = sorted(str(p.relative_to(host)) for p in (host / "outputs").rglob("*") if p.is_file())
        return out


@pytest.fixture
def hosts(quiet_other_workers, fault_env, fault_broker, fault_llm, fault_redis, s3_server,  # noqa: F811
          tmp_path) -> Iterator[Hosts]:
    env = dict(fault_env, STORAGE_BACKEND="s3", S3_ENDPOINT_URL=s3_server.url, S3_BUCKET=BUCKET,
               S3_REGION="us-east-1", **S3_KEYS)
    stack = Stack(env, fault_llm, fault_redis)
    hosts = Hosts(env=env, stack=stack, web_dir=make_host(tmp_path, "web-host"),
                  worker_dirs=[make_host(tmp_path, "worker-host-1"), make_host(tmp_path, "worker-host-2")],
                  web2_dir=make_host(tmp_path, "web-host-2"))
    try:
        hosts.start()
        yield hosts
    finally:
        stack.close()
        assert not stack.director.errors, stack.director.errors
