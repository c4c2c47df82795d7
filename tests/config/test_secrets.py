"""No secret that production would accept is in the repository."""

import ast
import os
import re
import secrets
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from django.core.exceptions import ImproperlyConfigured

from config.settings.secret_key import KNOWN_REPO_KEYS, local_secret_key, refuse_unsafe_secret_key

REPO = Path(__file__).resolve().parents[2]
SECRET_ASSIGNMENT = re.compile(r"SECRET_KEY\W{0,4}[:=]\s*[\"']?([^\s\"',)]+)")


def tracked_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True
    ).stdout
    return [REPO / name for name in listed.decode().split("\0") if name]


def test_production_refuses_a_short_key():
    with pytest.raises(ImproperlyConfigured, match="at least 50 characters"):
        refuse_unsafe_secret_key("x" * 49 + "", root=REPO)


@pytest.mark.parametrize("key", sorted(KNOWN_REPO_KEYS))
def test_production_refuses_every_key_ever_committed(key):
    with pytest.raises(ImproperlyConfigured):
        refuse_unsafe_secret_key(key, root=REPO)


def test_production_refuses_a_long_key_that_appears_in_a_repository_file(tmp_path):
    key = secrets.token_urlsafe(50)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "deploy.md").write_text(f"set SECRET_KEY={key} and go\n")

    with pytest.raises(ImproperlyConfigured, match=r"appears in the repository \(docs/deploy.md\)"):
        refuse_unsafe_secret_key(key, root=tmp_path)


def test_a_key_kept_only_in_dot_env_or_var_is_accepted(tmp_path):
    key = secrets.token_urlsafe(50)
    (tmp_path / ".env").write_text(f"SECRET_KEY={key}\n")
    (tmp_path / "var").mkdir()
    (tmp_path / "var" / "secret_key").write_text(key)

    refuse_unsafe_secret_key(key, root=tmp_path)  # does not raise


def test_a_fresh_random_key_is_accepted_against_this_repository():
    refuse_unsafe_secret_key(secrets.token_urlsafe(50), root=REPO)


def test_every_secret_key_written_in_a_tracked_file_is_refused():
    found = {
        match.group(1)
        for path in tracked_files()
        if path.is_file()
        for match in SECRET_ASSIGNMENT.finditer(path.read_text(errors="ignore"))
    }
    literal = {value for value in found if not value.startswith(("$", "os.", "SECRET_KEY"))}
    assert literal  # the scan found the test key at least
    for key in literal:
        with pytest.raises(ImproperlyConfigured):
            refuse_unsafe_secret_key(key, root=REPO)


def run_settings(module: str, **env: str) -> subprocess.CompletedProcess:
    environment = {
        "PATH": os.environ["PATH"],
        "DJANGO_SETTINGS_MODULE": module,
        "DATABASE_URL": "mysql://coupons:x@127.0.0.1:3306/coupons",
        **env,
    }
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup(); print('started')"],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
    )


def test_production_settings_refuse_to_start_with_the_old_compose_key():
    result = run_settings(
        "config.settings.production", SECRET_KEY="change-me-in-a-real-deployment-0123456789"
    )
    assert result.returncode != 0
    assert "SECRET_KEY must be at least 50 characters" in result.stderr


def test_production_settings_start_with_a_fresh_key():
    result = run_settings("config.settings.production", SECRET_KEY=secrets.token_urlsafe(50))
    assert (result.returncode, result.stdout) == (0, "started\n"), result.stderr


def test_local_settings_hold_no_key_of_their_own():
    tree = ast.parse((REPO / "config" / "settings" / "local.py").read_text())
    strings = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]
    assert [s for s in strings if len(s) >= 20 and " " not in s] == []


def test_the_local_key_is_made_once_private_and_kept(tmp_path):
    path = tmp_path / "var" / "secret_key"

    first = local_secret_key(path)
    again = local_secret_key(path)

    assert first == again
    assert len(first) >= 50
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert list(path.parent.iterdir()) == [path]  # no draft left behind


def test_var_and_dot_env_are_git_ignored():
    ignored = subprocess.run(
        ["git", "check-ignore", "var/secret_key", ".env"], cwd=REPO, capture_output=True, text=True
    )
    assert ignored.stdout.split() == ["var/secret_key", ".env"]


def test_docker_compose_takes_its_secrets_from_dot_env_and_the_app_is_not_root():
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    app = compose["services"]["app"]
    database = compose["services"]["mariadb"]["environment"]

    assert app["env_file"] == [".env"]
    assert app["environment"]["SECRET_KEY"].startswith("${SECRET_KEY:?")
    assert app["environment"]["DATABASE_URL"].startswith(
        "mysql://coupons:${MYSQL_PASSWORD:?set MYSQL_PASSWORD in .env}@mariadb:3306/"
    )
    assert database["MARIADB_USER"] == "coupons"
    # The .env keys keep their MYSQL_ names (decision 0521).
    for name in ("MYSQL_PASSWORD", "MYSQL_ROOT_PASSWORD"):
        assert database[name.replace("MYSQL_", "MARIADB_")].startswith("${" + name + ":?")
    example = (REPO / ".env.example").read_text()
    for name in ("SECRET_KEY", "MYSQL_PASSWORD", "MYSQL_ROOT_PASSWORD"):
        assert re.search(rf"^{name}=$", example, re.MULTILINE), name
