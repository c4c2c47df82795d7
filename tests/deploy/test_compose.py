"""docker-compose.yml and the Dockerfile, checked without a Docker daemon (none runs on these
machines): Debian's docker-compose 1.29 validates and resolves the file with .env.example's
keys filled in, and the Dockerfile's shape is read from its text. README.md says what was and
was not run."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_SECRETS = {
    "SECRET_KEY": "sample-only-" + "0123456789" * 5,
    "MYSQL_PASSWORD": "sample-password",
    "MYSQL_ROOT_PASSWORD": "sample-root-password",
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

    assert sorted(services) == ["app", "migrate", "mysql", "nginx", "redis", "scheduler"]
    assert volumes == ["mysql-data"]


def test_compose_migrates_once_then_runs_app_scheduler_and_nginx(compose_project):
    resolved = compose(compose_project, "config")

    def service(name: str) -> str:
        match = re.search(rf"^  {name}:\n((?:    .*\n|      .*\n)+)", resolved, re.M)
        assert match, f"no service {name}"
        return match.group(1)

    migrate, app, scheduler, nginx = (service(n) for n in ("migrate", "app", "scheduler", "nginx"))
    assert "- migrate\n" in migrate and 'restart: "no"' in migrate
    assert "build:" in migrate and "build:" not in app and "build:" not in scheduler
    for waiting in (app, scheduler):
        assert re.search(r"migrate:\n\s+condition: service_completed_successfully", waiting)
        assert "image: coupons-app:latest" in waiting
        assert "DJANGO_SETTINGS_MODULE: config.settings.production" in waiting
        assert "migrate\n" not in waiting.split("depends_on:")[0]  # nobody else migrates
    assert "- run_scheduler\n" in scheduler
    template = ROOT / "deploy" / "nginx" / "coupons.conf.template"
    assert template.exists()
    assert (
        f"{compose_project}/deploy/nginx/coupons.conf.template:"
        "/etc/nginx/templates/coupons.conf.template:ro" in nginx
    )
    assert "APP_UPSTREAM: app:8000" in nginx
    # The app connects as its own user, never root; secrets come from .env.
    assert "DATABASE_URL: mysql://coupons:sample-password@mysql:3306/coupons" in app
    assert "- mysql-data:/var/lib/mysql:rw" in service("mysql")  # the named volume


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
