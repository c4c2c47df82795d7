"""GET /api/coupons at SPEC section 15's cost: one statement beyond authentication, the terms
kept in memory under the database's version, and each freshness rule of the section."""

import threading
from datetime import timedelta

import MySQLdb
import pytest
from django.db import connection
from django.db.models import F
from rest_framework.renderers import JSONRenderer

from coupons import selectors, shopper_list
from coupons.api.serializers import ShopperTemplateSerializer
from coupons.models import CouponTemplate
from coupons.models.published_terms import PublishedTermsVersion
from coupons.services import codes, templates
from tests.support.clients import bearer_client
from tests.support.factories import CouponTemplateFactory, UserCouponFactory, UserFactory

pytestmark = pytest.mark.django_db


def listed(client, query: str = "") -> dict:
    response = client.get(f"/api/coupons{query}")
    assert response.status_code == 200, response.content
    return response.json()


def by_id(page: dict) -> dict[int, dict]:
    return {item["id"]: item for item in page["results"]}


def other_connection() -> MySQLdb.Connection:
    """A second session on the test database: another app process, as far as the list's
    in-memory terms can tell."""
    config = connection.settings_dict
    return MySQLdb.connect(
        host=config["HOST"] or "127.0.0.1",
        port=int(config["PORT"] or 3306),
        user=config["USER"],
        password=config["PASSWORD"] or "",
        database=config["NAME"],
        autocommit=True,
    )


# --- the answer is the serializer's, field for field -----------------------------------------


def test_every_item_and_the_page_links_are_what_the_serializer_gives(
    user, shopper_client, frozen_now
):
    # given: every kind of term and every state, on more than one page
    now = frozen_now.now()
    hour = timedelta(hours=1)
    CouponTemplateFactory(valid_from=now + hour, valid_until=now + 2 * hour)
    CouponTemplateFactory(valid_from=now - 2 * hour, valid_until=now - hour)
    CouponTemplateFactory(type="percent", value=15, min_amount=0, max_discount=2000, valid_days=7)
    CouponTemplateFactory(type="threshold", value=500, min_amount=5000, scope="products",
                          scope_ids=[3, 1, 2])  # fmt: skip
    sold_out = CouponTemplateFactory(total=1)
    UserCouponFactory(template=sold_out)
    mine = CouponTemplateFactory(per_user_limit=2)
    UserCouponFactory(template=mine, user=user)
    limit = CouponTemplateFactory(per_user_limit=1)
    UserCouponFactory(template=limit, user=user)
    CouponTemplateFactory(visibility="hidden", code="SECRET1")  # never listed
    CouponTemplateFactory.create_batch(2)
    CouponTemplateFactory(name="Zhé\u2028“quoted” </script>")  # what JSON must escape
    expected = ShopperTemplateSerializer(
        selectors.templates_for_shopper(user_id=user.pk), many=True, context={"now": now}
    ).data

    # when: three pages of 4, one past the end, served from memory after the first read
    answers = [shopper_client.get(f"/api/coupons?page_size=4&page={n}") for n in (1, 2, 3, 4)]
    pages = [answer.json() for answer in answers]

    # then: byte for byte what DRF renders for the serializer's data, and so the same JSON
    for number, (answer, page) in enumerate(zip(answers, pages, strict=True)):
        assert answer.status_code == 200
        assert answer["Content-Type"] == "application/json"
        rendered = {
            "count": 10,
            "next": page["next"],
            "previous": page["previous"],
            "results": expected[4 * number : 4 * number + 4],
        }
        assert answer.content == JSONRenderer().render(rendered)
    assert [page["count"] for page in pages] == [10, 10, 10, 10]
    items = [item for page in pages for item in page["results"]]
    assert items == [dict(item) for item in expected]
    assert [list(item) for item in items] == [list(item) for item in expected]  # same order
    assert {item["state"] for item in items} == {
        "not_started", "ended", "sold_out", "limit_reached", "claimable"
    }  # fmt: skip
    assert pages[0]["previous"] is None
    assert pages[0]["next"] == "http://testserver/api/coupons?page=2&page_size=4"
    assert pages[2]["next"] is None
    assert pages[3]["results"] == []
    assert pages[3]["previous"] == "http://testserver/api/coupons?page=3&page_size=4"


def test_bad_page_numbers_are_still_400(shopper_client):
    CouponTemplateFactory()
    response = shopper_client.get("/api/coupons?page=0")
    assert response.status_code == 400
    assert response.json()["fields"] == {"page": ["Must be a positive integer."]}


# --- cost ------------------------------------------------------------------------------------


def test_one_statement_beyond_authentication_with_a_full_page(
    user, shopper_client, django_assert_num_queries
):
    for template in CouponTemplateFactory.create_batch(25):
        UserCouponFactory(template=template, user=user)
    listed(shopper_client)  # this process reads the terms once per version

    with django_assert_num_queries(2) as captured:  # the user lookup, then the one statement
        page = listed(shopper_client)

    assert len(page["results"]) == 20 and page["count"] == 25
    assert "coupon_published_terms_version" in captured.captured_queries[1]["sql"]


def test_after_an_edit_the_terms_are_read_again_in_one_statement(
    user, shopper_client, django_assert_num_queries
):
    template = CouponTemplateFactory()
    listed(shopper_client)
    CouponTemplate.objects.get(pk=template.pk).save()  # an edit in this process

    with django_assert_num_queries(2):  # read with the version, the page answered from it
        listed(shopper_client)


# --- freshness (SPEC section 15) ---------------------------------------------------------------


def test_an_edit_through_the_admin_api_is_listed_by_the_next_request(shopper_client, staff_client):
    template = CouponTemplateFactory(name="Before", total=10, per_user_limit=1)
    assert by_id(listed(shopper_client))[template.pk]["name"] == "Before"  # kept in memory

    response = staff_client.patch(
        f"/api/admin/coupons/{template.pk}", {"name": "After", "total": 20}, format="json"
    )
    assert response.status_code == 200

    item = by_id(listed(shopper_client))[template.pk]
    assert (item["name"], item["total"]) == ("After", 20)


def test_publish_and_delete_are_listed_by_the_next_request(shopper_client, staff_client):
    kept = CouponTemplateFactory()
    gone = CouponTemplateFactory()
    assert listed(shopper_client)["count"] == 2

    response = staff_client.post(
        "/api/admin/coupons",
        {
            "name": "New",
            "type": "direct",
            "value": 100,
            "total": 5,
            "valid_from": "2020-01-01T00:00:00Z",
            "valid_until": "2099-01-01T00:00:00Z",
        },
        format="json",
    )
    assert response.status_code == 201
    templates.coupon_template_delete(template_id=gone.pk)  # the Django admin's delete

    page = listed(shopper_client)
    assert [item["id"] for item in page["results"]] == [response.json()["id"], kept.pk]
    assert page["count"] == 2


def test_hiding_a_template_takes_it_off_the_list(shopper_client, staff_client):
    template = CouponTemplateFactory()
    assert template.pk in by_id(listed(shopper_client))

    response = staff_client.patch(
        f"/api/admin/coupons/{template.pk}",
        {"visibility": "hidden", "code": "HIDDEN1"},
        format="json",
    )
    assert response.status_code == 200

    assert listed(shopper_client)["results"] == []


@pytest.mark.django_db(transaction=True)
def test_an_edit_committed_by_another_process_is_listed_by_the_next_request():
    # given: this process holds the terms in memory
    user = UserFactory()
    client = bearer_client(user)
    template = CouponTemplateFactory(name="Before", per_user_limit=1)
    assert by_id(listed(client))[template.pk]["name"] == "Before"

    # when: another process edits the template and gives the terms a new version, in one
    # transaction, as the edit service does through the signal
    other = other_connection()
    try:
        cursor = other.cursor()
        cursor.execute("BEGIN")
        cursor.execute(
            "UPDATE coupon_templates SET name = 'After', per_user_limit = 3 WHERE id = %s",
            [template.pk],
        )
        cursor.execute("UPDATE coupon_published_terms_version SET version = version + 1")
        cursor.execute("COMMIT")
    finally:
        other.close()

    # then
    item = by_id(listed(client))[template.pk]
    assert (item["name"], item["per_user_limit"]) == ("After", 3)


@pytest.mark.django_db(transaction=True)
def test_an_edit_not_yet_committed_is_not_listed_and_its_commit_is():
    user = UserFactory()
    client = bearer_client(user)
    template = CouponTemplateFactory(name="Before")
    listed(client)
    editing, committed = threading.Event(), threading.Event()

    def edit() -> None:
        from django.db import connection as thread_connection
        from django.db import transaction

        try:
            with transaction.atomic():
                row = CouponTemplate.objects.select_for_update().get(pk=template.pk)
                row.name = "After"
                row.save()
                shopper_list.published_terms_changed()  # in this transaction
                editing.set()
                committed.wait(10)
        finally:
            thread_connection.close()

    thread = threading.Thread(target=edit)
    thread.start()
    assert editing.wait(10)
    assert by_id(listed(client))[template.pk]["name"] == "Before"  # not committed yet
    committed.set()
    thread.join(10)

    assert by_id(listed(client))[template.pk]["name"] == "After"


def test_time_passing_flips_the_state_without_any_edit(
    shopper_client, frozen_now, django_assert_num_queries
):
    now = frozen_now.now()
    starts = CouponTemplateFactory(
        valid_from=now + timedelta(seconds=1), valid_until=now + timedelta(hours=1)
    )
    ends = CouponTemplateFactory(valid_from=now - timedelta(hours=1), valid_until=now)  # fmt: skip
    assert {pk: item["state"] for pk, item in by_id(listed(shopper_client)).items()} == {
        starts.pk: "not_started",
        ends.pk: "claimable",  # both ends inclusive
    }

    frozen_now(now + timedelta(seconds=1))
    with django_assert_num_queries(2):  # the terms stayed in memory: only time moved
        page = listed(shopper_client)

    assert {pk: item["state"] for pk, item in by_id(page).items()} == {
        starts.pk: "claimable",
        ends.pk: "ended",
    }


def test_my_claim_shows_limit_reached_as_soon_as_it_returned(user, shopper_client):
    template = CouponTemplateFactory(per_user_limit=1, total=10)
    assert by_id(listed(shopper_client))[template.pk]["state"] == "claimable"

    assert shopper_client.post(f"/api/coupons/{template.pk}/claim").status_code == 201

    item = by_id(listed(shopper_client))[template.pk]
    assert (item["state"], item["claimed_by_me"], item["claimed_count"]) == (
        "limit_reached",
        1,
        1,
    )


def test_claims_by_others_and_sold_out_are_listed_at_once(user, shopper_client):
    """SPEC section 15 lets counts lag by up to a second; they are read at request time, so
    they do not lag at all."""
    template = CouponTemplateFactory(total=2, per_user_limit=1)
    assert by_id(listed(shopper_client))[template.pk]["claimed_count"] == 0

    for other in UserFactory.create_batch(2):
        assert bearer_client(other).post(f"/api/coupons/{template.pk}/claim").status_code == 201

    item = by_id(listed(shopper_client))[template.pk]
    assert (item["claimed_count"], item["claimed_by_me"], item["state"]) == (2, 0, "sold_out")


def test_a_claimed_count_raised_behind_the_apps_back_is_listed(shopper_client):
    template = CouponTemplateFactory(total=3)
    listed(shopper_client)

    CouponTemplate.objects.filter(pk=template.pk).update(claimed_count=F("total"))

    assert by_id(listed(shopper_client))[template.pk]["state"] == "sold_out"


# --- without Redis, and without the version row ------------------------------------------------


@pytest.mark.servers
def test_the_list_needs_no_redis(shopper_client, staff_client, own_redis):
    template = CouponTemplateFactory(name="Before")
    listed(shopper_client)
    own_redis.stop()

    response = staff_client.patch(
        f"/api/admin/coupons/{template.pk}", {"name": "After"}, format="json"
    )
    assert response.status_code == 200

    assert by_id(listed(shopper_client))[template.pk]["name"] == "After"


def test_without_the_version_row_every_request_reads_the_terms(
    shopper_client, django_assert_num_queries
):
    # given: the row gone (a truncated table); nothing may be kept without it
    template = CouponTemplateFactory(name="Before")
    PublishedTermsVersion.objects.all().delete()
    listed(shopper_client)
    CouponTemplate.objects.filter(pk=template.pk).update(name="After")  # no new version

    with django_assert_num_queries(2):  # the user, the terms read with their missing version
        assert by_id(listed(shopper_client))[template.pk]["name"] == "After"

    # when: the next edit makes the row again
    templates.coupon_template_edit(template_id=template.pk, changes={})
    assert PublishedTermsVersion.objects.count() == 1
    listed(shopper_client)
    with django_assert_num_queries(2):
        assert by_id(listed(shopper_client))[template.pk]["name"] == "After"


def test_a_template_deleted_without_a_new_version_is_not_listed(shopper_client):
    """A page whose template is gone is read again, even if the version was not changed (a
    raw delete): the statement finds one row fewer than the page asked for."""
    kept, gone = CouponTemplateFactory(), CouponTemplateFactory()
    listed(shopper_client)
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM coupon_templates WHERE id = %s", [gone.pk])

    page = listed(shopper_client)
    assert [item["id"] for item in page["results"]] == [kept.pk]
    assert page["count"] == 1


def test_published_terms_changed_is_the_hook_for_writes_without_save(shopper_client):
    """Pause / resume (SPEC section 18) or any QuerySet.update() of terms call it."""
    template = CouponTemplateFactory(name="Before")
    listed(shopper_client)
    CouponTemplate.objects.filter(pk=template.pk).update(name="After")
    assert by_id(listed(shopper_client))[template.pk]["name"] == "Before"  # kept: no version

    shopper_list.published_terms_changed()

    assert by_id(listed(shopper_client))[template.pk]["name"] == "After"


def test_pause_resume_and_single_use_codes_are_listed_by_the_next_request(shopper_client):
    # given: the list's terms kept in memory (read once)
    template = CouponTemplateFactory()
    assert by_id(listed(shopper_client))[template.pk]["state"] == "claimable"

    # when / then: each change is seen by the next request, with no save() signal involved
    templates.coupon_template_pause(template_id=template.pk)
    assert by_id(listed(shopper_client))[template.pk]["state"] == "paused"
    templates.coupon_template_resume(template_id=template.pk)
    assert by_id(listed(shopper_client))[template.pk]["state"] == "claimable"
    codes.single_use_codes_create(template_id=template.pk, count=3, codes_only=True)
    assert template.pk not in by_id(listed(shopper_client))
