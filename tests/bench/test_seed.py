"""The benchmark's bulk seeding against the real schema (so a new NOT NULL column shows here,
not half-way through a 3-minute benchmark), and the facts the exactness checks read."""

import pytest

from bench import seed
from coupons.models import CouponTemplate, UserCoupon
from tests.support.factories import CouponTemplateFactory, UserCouponFactory, UserFactory


@pytest.mark.django_db
def test_claim_facts_reads_rows_claimants_and_counts_of_one_template():
    # given: two users hold three coupons of the template, and another template has one
    template = CouponTemplateFactory(total=10, per_user_limit=2)
    first, second = UserFactory(), UserFactory()
    UserCouponFactory(template=template, user=first)
    UserCouponFactory(template=template, user=first)
    UserCouponFactory(template=template, user=second)
    UserCouponFactory(user=second)

    # when
    facts = seed.claim_facts(template.pk)

    # then
    assert facts == {"rows": 3, "distinct_users": 2, "claimed_count": 3, "total": 10}


@pytest.mark.django_db
def test_bulk_seeding_writes_valid_coupons_and_matching_counts():
    # given
    seed.insert_holders(5)
    held = CouponTemplate.objects.get(pk=seed.create_template("scale", total=100))
    listed = seed.create_templates("list", 2, total=100, per_user_limit=4)
    reader = UserFactory()

    # when
    seed.insert_existing_claims(held.pk, 5)
    given = seed.give_coupons(reader.pk, listed, 4)

    # then: the counts agree, and each coupon carries its template's window as a claim would
    assert seed.claim_facts(held.pk) == {
        "rows": 5,
        "distinct_users": 5,
        "claimed_count": 5,
        "total": 100,
    }
    assert given == 8
    for template_id in listed:
        assert seed.claim_facts(template_id)["claimed_count"] == 4
    coupons = UserCoupon.objects.filter(template=held)
    assert {(c.slot, c.source, c.valid_from, c.valid_until) for c in coupons} == {
        (1, "claim", held.valid_from, held.valid_until)
    }
    statuses = UserCoupon.objects.filter(user=reader).values_list("status", flat=True)
    assert sorted(statuses) == ["unused"] * 6 + ["used"] * 2  # every fourth one used


@pytest.mark.django_db
def test_templates_seeded_in_bulk_are_listed_by_the_next_list_request(user, shopper_client):
    """The seed writes templates with bulk_create and tells the shopper list's kept terms itself,
    or the bench's list row would be served the terms of before the seed."""
    CouponTemplateFactory()
    assert shopper_client.get("/api/coupons").json()["count"] == 1  # the terms now kept

    seed.create_templates("list", 3, total=100, per_user_limit=1)

    assert shopper_client.get("/api/coupons").json()["count"] == 4


@pytest.mark.django_db
def test_a_template_seeded_alone_is_listed_by_the_next_list_request(user, shopper_client):
    """create_template writes with the ORM, outside the services: it tells the list too."""
    CouponTemplateFactory()
    assert shopper_client.get("/api/coupons").json()["count"] == 1  # the terms now kept

    seed.create_template("storm", total=100)

    assert shopper_client.get("/api/coupons").json()["count"] == 2
