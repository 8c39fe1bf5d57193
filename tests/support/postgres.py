"""A private PostgreSQL server for the test run: Debian's binaries, a data dir under the run dir, a loopback port.

PostgreSQL refuses to run as root, so as root the cluster is owned by and run as the `postgres` system user
(created by Debian's package); as any other user it runs as that user. Authentication is `trust` on
127.0.0.1 only: the server lives as long as the test session and its data dir is deleted with the run dir.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import time
from pathlib import Path

USER = "research"


def pg_bindir() -> Path:
    """The newest installed server's bin dir (Debian: /usr/lib/postgresql/<major>/bin)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).parent
    raise RuntimeError("PostgreSQL is not installed: run scripts/sysdeps.sh (Debian package `postgresql`)")


def _as_owner(argv: list[str]) -> list[str]:
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *argv]
    return argv


class PostgresServer:
    def __init__(self, data_dir: Path, port: int) -> None:
        self.data_dir = data_dir
        self.port = port
        self.log = data_dir.parent / f"postgres-{port}.log"
        self.bindir = pg_bindir()

    def url(self, name: str) -> str:
        return f"postgres://{USER}@127.0.0.1:{self.port}/{name}"

    def _run(self, *argv: str) -> None:
        done = subprocess.run(_as_owner(list(argv)), capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed:\n{done.stdout}\n{done.stderr}")

    def start(self) -> PostgresServer:
        if os.geteuid() == 0:
            # The postgres user must reach the data dir: let it traverse the (private) run dir.
            os.chmod(self.data_dir.parent, 0o711)
            self.data_dir.mkdir(mode=0o700, exist_ok=True)
            shutil.chown(self.data_dir, "postgres", "postgres")
            self.log.touch()
            shutil.chown(self.log, "postgres", "postgres")
        self._run(str(self.bindir / "initdb"), "-D", str(self.data_dir), "-U", USER, "--auth=trust",
                  "--encoding=UTF8", "--locale=C.UTF-8", "--no-sync")
        # No fsync: the cluster is thrown away after the run, and CI disks are slow.
        options = (f"-c listen_addresses=127.0.0.1 -c port={self.port} -c unix_socket_directories={self.data_dir} "
                   "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200")
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data_dir), "-l", str(self.log), "-o", options,
                  "-w", "-t", "60", "start")
        return self

    def wait_ready(self, timeout: float = 30) -> None:
        import psycopg

        deadline = time.monotonic() + timeout
        while True:
            try:
                psycopg.connect(self.url("postgres"), connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def stop(self) -> None:
        if (self.data_dir / "postmaster.pid").exists():
            subprocess.run(_as_owner([str(self.bindir / "pg_ctl"), "-D", str(self.data_dir), "-m", "immediate",
                                      "-w", "stop"]), capture_output=True, timeout=60)
        shutil.rmtree(self.data_dir, ignore_errors=True)  # the cluster is the session's alone
