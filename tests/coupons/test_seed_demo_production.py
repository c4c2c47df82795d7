"""No known password in production (SPEC section 19, issue 16 finding 1): `seed_demo` creates
`admin` / `demo-pass-123`, so it refuses to run under the production settings, and nothing
documented for a production deployment runs it."""

import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from coupons.models import CouponTemplate

REPO = Path(__file__).resolve().parents[2]


def manage(command: str, **env: str) -> subprocess.CompletedProcess:
    database = connection.settings_dict
    return subprocess.run(
        [sys.executable, "manage.py", command],
        cwd=REPO,
        env={
            "PATH": "/usr/bin:/bin",
            # pytest-django's test database, so the test can see what the command wrote.
            "DATABASE_URL": f"mysql://{database['USER']}@{database['HOST'] or '127.0.0.1'}:"
            f"{database['PORT'] or 3306}/{database['NAME']}",
            "REDIS_URL": "redis://127.0.0.1:1/0",  # never reached: nothing is claimed
            **env,
        },
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.django_db(transaction=True)
def test_seed_demo_refuses_to_run_under_the_production_settings():
    result = manage(
        "seed_demo",
        DJANGO_SETTINGS_MODULE="config.settings.production",
        SECRET_KEY=secrets.token_urlsafe(50),
    )

    assert result.returncode != 0
    assert "seed_demo refuses to run under production settings" in result.stderr
    assert get_user_model().objects.count() == 0
    assert CouponTemplate.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_seed_demo_still_runs_under_the_local_settings():
    result = manage("seed_demo", DJANGO_SETTINGS_MODULE="config.settings.local")

    assert result.returncode == 0, result.stderr
    assert get_user_model().objects.filter(username="admin", is_staff=True).count() == 1


PRODUCTION_FILES = ["docker-compose.yml", "Dockerfile", ".env.example", "deploy"]


def production_texts() -> dict[str, str]:
    """What an operator reads and runs to deploy: the compose file, the image, the env
    template, the proxy config, and the deployment sections of the README and the operations
    guide."""
    texts = {}
    for name in PRODUCTION_FILES:
        path = REPO / name
        for file in [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file()):
            texts[str(file.relative_to(REPO))] = file.read_text()
    for guide in ["README.md", "docs/operations.md"]:
        for section in re.split(r"\n(?=##+ )", (REPO / guide).read_text()):
            title = section.splitlines()[0]
            if re.search(r"docker|production|deploy|nginx|secret", title, re.I):
                texts[f"{guide}: {title}"] = section
    return texts


def test_nothing_documented_for_production_creates_a_user_with_a_published_password():
    texts = production_texts()
    assert "docker-compose.yml" in texts
    assert "docs/operations.md: ## Deploying" in texts

    offering_demo_data = {
        where: [line for line in text.splitlines() if re.search(r"seed_demo\b|demo-pass", line)]
        for where, text in texts.items()
    }
    assert {where: lines for where, lines in offering_demo_data.items() if lines} == {}
