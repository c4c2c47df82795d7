"""Login and token errors in Chinese under zh-hans (SPEC section 20, "For integrators"):
simplejwt's own messages included, which its app catalog left in English."""

import pytest
from django.utils import translation
from rest_framework.test import APIClient

from accounts.token_messages import SIMPLEJWT_MESSAGES
from tests.support.factories import UserFactory

pytestmark = pytest.mark.django_db

PASSWORD = "pass-word-123"


def post_zh(path: str, body: dict):
    return APIClient().post(path, body, format="json", HTTP_ACCEPT_LANGUAGE="zh-hans")


def test_a_wrong_password_and_a_missing_field_are_answered_in_chinese():
    UserFactory(username="alice")

    wrong = post_zh("/api/auth/token", {"username": "alice", "password": "wrong"})
    missing = post_zh("/api/auth/token", {"username": "alice"})

    assert (wrong.status_code, wrong.json()) == (
        401,
        {"code": "authentication_failed", "detail": "找不到指定凭据对应的有效用户"},
    )
    assert missing.json()["fields"] == {"password": ["该字段是必填项。"]}


def test_bad_and_used_refresh_tokens_are_answered_in_chinese():
    UserFactory(username="alice")
    login = {"username": "alice", "password": PASSWORD}
    used = APIClient().post("/api/auth/token", login, format="json").json()["refresh"]
    assert post_zh("/api/auth/token/refresh", {"refresh": used}).status_code == 200

    bad = post_zh("/api/auth/token/refresh", {"refresh": "not-a-token"})
    again = post_zh("/api/auth/token/refresh", {"refresh": used})

    assert bad.json()["detail"] == "令牌无效"  # before: "Token is invalid"
    assert again.json()["detail"] == "令牌已被加入黑名单"


def test_every_simplejwt_message_left_in_english_by_its_catalog_has_a_translation():
    with translation.override("zh-hans"):
        untranslated = [text for text in SIMPLEJWT_MESSAGES if translation.gettext(text) == text]

    assert untranslated == []
