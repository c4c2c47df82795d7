"""docker-compose.yml and the Dockerfile, checked without a Docker daemon (none runs on these
machines): Debian's docker-compose 1.29 validates and resolves the file with .env.example's
keys filled in, and the Dockerfile's shape is read from its text. README.md says what was and
was not run."""

import ipaddress
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from config.settings.base import database_timeouts

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_SECRETS = {
    "SECRET_KEY": "sample-only-" + "0123456789" * 5,
    "MYSQL_PASSWORD": "sample-password",
    "MYSQL_ROOT_PASSWORD": "sample-root-password",
    "RABBITMQ_PASSWORD": "sample-broker-password",
}


@pytest.fixture
def compose_project(tmp_path) -> Path:
    """The compose file beside a .env made from .env.example (every key kept, the empty
    secrets filled with samples), as an operator would set it up."""
    if shutil.which("docker-compose") is None:
        pytest.fail("docker-compose is missing: run scripts/ensure-test-deps (make test does).")
    lines = []
    for line in (ROOT / ".env.example").read_text().splitlines():
        key = line.split("=", 1)[0]
        if key in SAMPLE_SECRETS and line == f"{key}=":
            line = f"{key}={SAMPLE_SECRETS[key]}"
        lines.append(line)
    (tmp_path / ".env").write_text("\n".join(lines) + "\n")
    shutil.copy(ROOT / "docker-compose.yml", tmp_path / "docker-compose.yml")
    (tmp_path / "deploy").symlink_to(ROOT / "deploy")
    return tmp_path


def compose(project: Path, *args: str) -> str:
    result = subprocess.run(
        ["docker-compose", *args],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_env_example_leaves_every_secret_empty():
    values = dict(
        line.split("=", 1)
        for line in (ROOT / ".env.example").read_text().splitlines()
        if line and not line.startswith("#")
    )
    assert {key: values[key] for key in SAMPLE_SECRETS} == dict.fromkeys(SAMPLE_SECRETS, "")


def test_the_compose_file_is_valid_with_the_example_env(compose_project):
    compose(compose_project, "config", "-q")

    services = compose(compose_project, "config", "--services").split()
    volumes = compose(compose_project, "config", "--volumes").split()

    assert sorted(services) == [
        *("app", "beat", "mariadb", "migrate", "nginx", "rabbitmq", "redis", "scheduler"),
        "worker",
    ]
    assert sorted(volumes) == ["mariadb-data", "rabbitmq-data", "staff-files"]


def test_compose_migrates_once_then_runs_app_scheduler_workers_and_nginx(compose_project):
    resolved = compose(compose_project, "config")

    def service(name: str) -> str:
        match = re.search(rf"^  {name}:\n((?:    .*\n|      .*\n)+)", resolved, re.M)
        assert match, f"no service {name}"
        return match.group(1)

    migrate, app, scheduler, nginx = (service(n) for n in ("migrate", "app", "scheduler", "nginx"))
    worker, beat = service("worker"), service("beat")
    assert "- migrate\n" in migrate and 'restart: "no"' in migrate
    assert "build:" in migrate and "build:" not in app and "build:" not in scheduler
    for waiting in (app, scheduler, worker, beat):
        assert re.search(r"migrate:\n\s+condition: service_completed_successfully", waiting)
        assert "image: coupons-app:latest" in waiting
        assert "DJANGO_SETTINGS_MODULE: config.settings.production" in waiting
        assert "migrate\n" not in waiting.split("depends_on:")[0]  # nobody else migrates
    assert "- run_scheduler\n" in scheduler
    # The queue's worker and its one beat, on RabbitMQ once it answers (decision 1024).
    assert "- worker\n" in worker and "- beat\n" in beat
    for queued in (worker, beat):
        assert re.search(r"rabbitmq:\n\s+condition: service_healthy", queued)
        assert "CELERY_BROKER_URL: amqp://coupons:sample-broker-password@rabbitmq:5672//" in queued
    assert "- rabbitmq-data:/var/lib/rabbitmq:rw" in service("rabbitmq")
    # Staff jobs' files: uploaded to the app, written by a worker, downloaded from the app.
    for sharing in (app, worker):
        assert "- staff-files:/app/var/media:rw" in sharing
    template = ROOT / "deploy" / "nginx" / "coupons.conf.template"
    assert template.exists()
    assert (
        f"{compose_project}/deploy/nginx/coupons.conf.template:"
        "/etc/nginx/templates/coupons.conf.template:ro" in nginx
    )
    assert "APP_UPSTREAM: app:8000" in nginx
    # The app connects as its own user, never root; secrets come from .env.
    assert "DATABASE_URL: mysql://coupons:sample-password@mariadb:3306/coupons" in app
    assert "- mariadb-data:/var/lib/mysql:rw" in service("mariadb")  # the named volume


def test_the_dockerfile_builds_wheels_with_a_compiler_and_runs_without_one_as_non_root():
    text = (ROOT / "Dockerfile").read_text()
    stages = re.split(r"^FROM ", text, flags=re.M)[1:]

    assert len(stages) == 2
    builder, final = stages
    assert builder.startswith("python:3.11-slim-bookworm AS builder")
    assert "gcc" in builder and "pip wheel" in builder and "msgfmt" in builder
    final_commands = "\n".join(line for line in final.splitlines() if not line.startswith("#"))
    assert "gcc" not in final_commands and "-dev" not in final_commands
    assert "pip install --no-cache-dir --no-index" in final  # only the builder's wheels
    assert re.search(r"^USER app$", final, re.M)
    dockerignore = (ROOT / ".dockerignore").read_text().split()
    assert {".git", ".venv", "var", ".env"} <= set(dockerignore)


def test_the_app_is_probed_on_the_probes_own_port(compose_project):
    """Decision 1032: the image answers the probes on PROBE_BIND by threads of their own, and
    compose's health check asks there."""
    text = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^\s+PROBE_BIND=0\.0\.0\.0:8001$", text, re.M)
    assert re.search(r"^EXPOSE 8000 8001$", text, re.M)
    check = resolved_services(compose_project)["app"]["healthcheck"]["test"]
    assert "http://127.0.0.1:8001/healthz" in " ".join(check)


def resolved_services(project: Path) -> dict[str, dict]:
    return yaml.safe_load(compose(project, "config"))["services"]


def test_the_database_is_mariadb_10_11_what_the_tests_run_against(compose_project):
    database = resolved_services(compose_project)["mariadb"]

    assert database["image"] == "mariadb:10.11"
    assert database["environment"]["MARIADB_USER"] == "coupons"
    assert database["environment"]["MARIADB_PASSWORD"] == "sample-password"
    assert database["healthcheck"]["test"] == [
        "CMD", "healthcheck.sh", "--connect", "--innodb_initialized"
    ]  # fmt: skip


def test_the_migrate_step_is_not_bound_by_the_request_timeouts(compose_project, monkeypatch):
    services = resolved_services(compose_project)

    def timeouts_in(service: str) -> dict[str, int]:
        with monkeypatch.context() as env:
            for name in ("DB_CONNECT_TIMEOUT", "DB_READ_TIMEOUT", "DB_WRITE_TIMEOUT"):
                env.delenv(name, raising=False)
            for name, value in services[service]["environment"].items():
                env.setenv(name, str(value))
            return database_timeouts()

    assert timeouts_in("app") == {"connect_timeout": 2, "read_timeout": 8, "write_timeout": 8}
    assert timeouts_in("migrate") == {
        "connect_timeout": 2,
        "read_timeout": 3600,
        "write_timeout": 3600,
    }
    # Everything else the app has, the migrate step has too.
    app, migrate = services["app"]["environment"], services["migrate"]["environment"]
    assert {k: v for k, v in migrate.items() if not k.startswith("DB_")} == app


def test_the_app_trusts_forwarded_headers_from_nginx_only(compose_project):
    resolved = yaml.safe_load(compose(compose_project, "config"))
    services = resolved["services"]
    subnet = ipaddress.ip_network(resolved["networks"]["default"]["ipam"]["config"][0]["subnet"])
    nginx_address = services["nginx"]["networks"]["default"]["ipv4_address"]

    assert ipaddress.ip_address(nginx_address) in subnet
    for service in ("app", "scheduler", "migrate"):
        assert services[service]["environment"]["TRUSTED_PROXIES"] == nginx_address
    # nginx is the edge unless the operator names a front: its default matches no peer.
    assert services["nginx"]["environment"]["TRUSTED_FRONT"] == "0.0.0.0/32"
    # The app is reached through nginx only: it publishes no port.
    assert "ports" not in services["app"]


def test_no_origin_is_hard_wired_to_a_port(compose_project):
    env_file = (compose_project / ".env").read_text()
    (compose_project / ".env").write_text(env_file.replace("HTTP_PORT=8080", "HTTP_PORT=9090"))
    services = resolved_services(compose_project)

    assert services["nginx"]["ports"][0]["published"] in (9090, "9090")
    assert services["app"]["environment"]["CSRF_TRUSTED_ORIGINS"] == ""
