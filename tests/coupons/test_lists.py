"""GET /api/coupons (my view of every template) and GET /api/coupons/mine."""

from datetime import timedelta

import pytest

from coupons.models import UserCoupon
from tests.support.factories import CouponTemplateFactory, UserCouponFactory

pytestmark = pytest.mark.django_db


def test_every_state_in_spec_order(user, shopper_client, frozen_now):
    now = frozen_now.now()
    hour = timedelta(hours=1)
    not_started = CouponTemplateFactory(valid_from=now + hour, valid_until=now + 2 * hour)
    ended = CouponTemplateFactory(valid_from=now - 2 * hour, valid_until=now - hour, total=1)
    UserCouponFactory(template=ended)  # ended beats sold out
    sold_out = CouponTemplateFactory(total=1, per_user_limit=1)
    UserCouponFactory(template=sold_out, user=user)  # sold out beats limit reached
    limit_reached = CouponTemplateFactory(total=5, per_user_limit=1)
    UserCouponFactory(template=limit_reached, user=user)
    claimable = CouponTemplateFactory(total=5, per_user_limit=2)
    UserCouponFactory(template=claimable, user=user)
    UserCouponFactory(template=claimable)
    starts_now = CouponTemplateFactory(valid_from=now, valid_until=now + hour)  # inclusive
    ends_now = CouponTemplateFactory(valid_from=now - hour, valid_until=now)  # inclusive

    items = {item["id"]: item for item in shopper_client.get("/api/coupons").json()["results"]}

    assert {pk: items[pk]["state"] for pk in items} == {
        not_started.pk: "not_started",
        ended.pk: "ended",
        sold_out.pk: "sold_out",
        limit_reached.pk: "limit_reached",
        claimable.pk: "claimable",
        starts_now.pk: "claimable",
        ends_now.pk: "claimable",
    }
    assert (items[claimable.pk]["claimed_count"], items[claimable.pk]["claimed_by_me"]) == (2, 1)
    assert set(items[claimable.pk]) == {
        "id",
        "name",
        "type",
        "value",
        "min_amount",
        "total",
        "per_user_limit",
        "valid_from",
        "valid_until",
        "max_discount",
        "valid_days",
        "scope",
        "scope_ids",
        "excluded_product_ids",
        "excluded_category_ids",
        "one_unit_only",
        "audience",
        "claimed_count",
        "claimed_by_me",
        "state",
    }


def test_one_now_for_the_whole_page(user, shopper_client, monkeypatch):
    """The clock is read once per request, so a page cannot straddle an instant."""
    from core import clock

    real_now = clock.now
    calls = []
    monkeypatch.setattr(clock, "now", lambda: calls.append(1) or real_now())
    CouponTemplateFactory.create_batch(5)
    calls.clear()

    assert shopper_client.get("/api/coupons").status_code == 200
    assert len(calls) == 1


# A constant number of queries whatever the page holds: authentication's user lookup and, for
# the shopper list, one statement (SPEC section 15; tests/coupons/test_shopper_list.py); "mine"
# has the paginator's count, the page and one prefetch of the page's templates.


def test_query_count_does_not_grow_with_the_page(user, shopper_client, django_assert_num_queries):
    CouponTemplateFactory()
    shopper_client.get("/api/coupons")  # the terms are read once per process and version
    with django_assert_num_queries(2):
        assert len(shopper_client.get("/api/coupons?page_size=50").json()["results"]) == 1
    for template in CouponTemplateFactory.create_batch(49):
        UserCouponFactory(template=template, user=user)
    shopper_client.get("/api/coupons")
    with django_assert_num_queries(2):
        assert len(shopper_client.get("/api/coupons?page_size=50").json()["results"]) == 50


def test_mine_query_count_does_not_grow_with_the_page(
    user, shopper_client, django_assert_num_queries
):
    UserCouponFactory(user=user)
    with django_assert_num_queries(4):
        assert len(shopper_client.get("/api/coupons/mine?page_size=50").json()["results"]) == 1
    UserCouponFactory.create_batch(49, user=user)
    with django_assert_num_queries(4):
        assert len(shopper_client.get("/api/coupons/mine?page_size=50").json()["results"]) == 50


def test_mine_filters_by_derived_status_newest_first(user, shopper_client, frozen_now):
    now = frozen_now.now()
    live = CouponTemplateFactory(valid_until=now + timedelta(days=1), name="Live")
    gone = CouponTemplateFactory(
        valid_until=now - timedelta(seconds=1), valid_from=now - timedelta(days=2)
    )
    unused_old = UserCouponFactory(user=user, template=live)
    used = UserCouponFactory(
        user=user, template=gone, status=UserCoupon.Status.USED, used_at=now - timedelta(days=1)
    )
    expired = UserCouponFactory(user=user, template=gone)
    unused_new = UserCouponFactory(user=user, template=live)
    UserCouponFactory(template=live)  # someone else's

    def ids(query: str) -> list[int]:
        response = shopper_client.get(f"/api/coupons/mine{query}")
        assert response.status_code == 200
        return [item["id"] for item in response.json()["results"]]

    assert ids("") == [unused_new.pk, expired.pk, used.pk, unused_old.pk]
    assert ids("?status=unused") == [unused_new.pk, unused_old.pk]
    assert ids("?status=used") == [used.pk]
    assert ids("?status=expired") == [expired.pk]
    statuses = {
        item["id"]: item["status"]
        for item in shopper_client.get("/api/coupons/mine").json()["results"]
    }
    assert statuses == {
        unused_new.pk: "unused",
        expired.pk: "expired",
        used.pk: "used",
        unused_old.pk: "unused",
    }
    item = shopper_client.get("/api/coupons/mine?status=unused").json()["results"][0]
    assert item["template"] == {
        "id": live.pk,
        "name": "Live",
        "type": "direct",
        "value": 500,
        "min_amount": 0,
        "max_discount": None,
        "scope": "all",
        "scope_ids": [],
        "excluded_product_ids": [],
        "excluded_category_ids": [],
        "one_unit_only": False,
        "valid_from": item["template"]["valid_from"],
        "valid_until": item["template"]["valid_until"],
    }


def test_unused_at_the_last_instant_of_the_window(user, shopper_client, frozen_now):
    now = frozen_now.now()
    template = CouponTemplateFactory(valid_until=now)
    UserCouponFactory(user=user, template=template)
    assert shopper_client.get("/api/coupons/mine?status=unused").json()["count"] == 1
    frozen_now(now + timedelta(milliseconds=1))
    assert shopper_client.get("/api/coupons/mine?status=expired").json()["count"] == 1


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("?status=lost", "status"),
        ("?page=0", "page"),
        ("?page=-1", "page"),
        ("?page_size=abc", "page_size"),
        ("?page=%C2%B2", "page"),  # "²": a digit to str.isdigit(), not to int()
        ("?page_size=%EF%BC%91", "page_size"),  # a full-width "1"
        ("?page_size=0", "page_size"),
        ("?colour=red", "colour"),
    ],
)
def test_mine_bad_query_is_400_naming_the_parameter(shopper_client, query, field):
    response = shopper_client.get(f"/api/coupons/mine{query}")
    assert response.status_code == 400
    assert response.json()["code"] == "invalid"
    assert list(response.json()["fields"]) == [field]


def test_mine_pagination_bounds(user, shopper_client):
    UserCouponFactory.create_batch(55, user=user)

    default = shopper_client.get("/api/coupons/mine").json()
    capped = shopper_client.get("/api/coupons/mine?page_size=500").json()
    last = shopper_client.get("/api/coupons/mine?page_size=50&page=2").json()
    past = shopper_client.get("/api/coupons/mine?page_size=50&page=3").json()

    assert (default["count"], len(default["results"])) == (55, 20)
    assert default["next"].endswith("page=2")
    assert default["previous"] is None
    assert len(capped["results"]) == 50
    assert (len(last["results"]), last["next"]) == (5, None)
    assert (past["count"], past["results"], past["next"]) == (55, [], None)


def test_empty_lists_are_empty_pages(shopper_client):
    for path in ("/api/coupons", "/api/coupons/mine", "/api/coupons/mine?status=used"):
        assert shopper_client.get(path).json() == {
            "count": 0,
            "next": None,
            "previous": None,
            "results": [],
        }


def test_lists_need_a_token():
    from rest_framework.test import APIClient

    assert APIClient().get("/api/coupons").status_code == 401
    assert APIClient().get("/api/coupons/mine").status_code == 401
