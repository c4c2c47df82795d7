"""Every error in the envelope (SPEC section 19): a CSRF failure under /api/ and on /healthz is
JSON, the admin keeps its pages, and a request for a Host the site does not serve is one log
line and a 400, not a traceback."""

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client, RequestFactory

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.django_db
def test_post_healthz_with_a_session_cookie_is_a_json_403():
    client = Client(enforce_csrf_checks=True)
    client.cookies["sessionid"] = "a-session"

    response = client.post("/healthz")

    assert (response.status_code, response["Content-Type"]) == (403, "application/json")
    assert response.json() == {
        "code": "permission_denied",
        "detail": "CSRF verification failed. Request aborted.",
    }


@pytest.mark.django_db
@pytest.mark.parametrize("method", ["TRACE", "POST", "DELETE"])
def test_healthz_refuses_other_methods_with_405_and_allow(method):
    """Before: TRACE /healthz was a 200 health answer."""
    response = Client().generic(method, "/healthz")

    assert (response.status_code, response["Allow"]) == (405, "GET, HEAD")
    assert response.json() == {
        "code": "method_not_allowed",
        "detail": f'Method "{method}" not allowed.',
    }


def test_a_csrf_failure_under_the_api_is_json():
    from api.exceptions import csrf_failure  # CSRF_FAILURE_VIEW (no /api/ view uses CSRF)

    request = RequestFactory().post("/api/coupons/1/claim")

    response = csrf_failure(request, reason="CSRF cookie not set.")

    assert (response.status_code, response["Content-Type"]) == (403, "application/json")
    assert json.loads(response.content)["code"] == "permission_denied"


@pytest.mark.django_db
def test_the_admin_login_keeps_its_html_csrf_page():
    response = Client(enforce_csrf_checks=True).post(
        "/admin/login/", {"username": "a", "password": "b"}
    )

    assert response.status_code == 403
    assert response["Content-Type"].startswith("text/html")


def test_a_request_for_an_unknown_host_is_one_log_line_and_a_400(tmp_path):
    # given: the production settings and logging, in a process of their own
    script = (
        "import django, json; django.setup()\n"
        "from django.test import Client\n"
        "for _ in range(3):\n"
        "    response = Client().get('/healthz', HTTP_HOST='attacker.example')\n"
        "    print(response.status_code, response.content.decode())\n"
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.production",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "shop.example",
        "LOG_LEVEL": "INFO",
    }

    # when
    run = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True
    )

    # then
    assert run.returncode == 0, run.stderr
    answers = run.stdout.splitlines()
    assert len(answers) == 3
    for answer in answers:
        status, body = answer.split(" ", 1)
        assert (status, json.loads(body)["code"]) == ("400", "invalid")
    assert "Traceback" not in run.stderr
    log = [line for line in run.stderr.splitlines() if "django.security" in line]
    assert len(log) == 3, run.stderr
    for line in log:
        assert "django.security.DisallowedHost" in line
        assert "Invalid HTTP_HOST header: 'attacker.example'" in line


@pytest.mark.django_db
def test_an_unknown_route_answers_chinese_as_itself_not_escaped():
    """Issue: unknown routes answered `\\u`-escaped JSON; DRF's own answers never were."""
    response = Client().get("/api/no-such-route", HTTP_ACCEPT_LANGUAGE="zh-hans")

    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert b"\\u" not in response.content
    detail = json.loads(response.content)["detail"]
    assert any(ord(char) > 127 for char in detail)  # said in Chinese
    assert detail in response.content.decode("utf-8")
