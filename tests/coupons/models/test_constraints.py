"""Every template and user-coupon rule the database can hold, checked by writing a bad row
straight to the database past all Python validation."""

import pytest
from django.db import DatabaseError, IntegrityError, connection, transaction

from tests.support.factories import CouponTemplateFactory, UserCouponFactory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("assignment", "constraint"),
    [
        ("name = '   '", "coupon_template_name_not_blank"),
        ("type = 'coupon'", "coupon_template_type_known"),
        ("type = 'percent', value = 100", "coupon_template_percent_in_range"),
        ("max_discount = 100", "coupon_template_max_discount_percent_only"),  # on a direct
        (
            "type = 'percent', value = 10, max_discount = 0",
            "coupon_template_max_discount_percent_only",
        ),
        ("valid_days = 0", "coupon_template_valid_days_in_range"),
        ("valid_days = 3651", "coupon_template_valid_days_in_range"),
        ("scope = 'categories'", "coupon_template_scope_ids_fit_scope"),  # no ids
        ("scope_ids = '[1]'", "coupon_template_scope_ids_fit_scope"),  # ids on scope all
        ("scope = 'brands', scope_ids = '[1]'", "coupon_template_scope_ids_fit_scope"),
        (
            f"scope = 'products', scope_ids = '{list(range(1, 502))}'",
            "coupon_template_scope_ids_fit_scope",
        ),
        ("code = 'abc'", "coupon_template_code_format"),
        ("code = 'no spaces'", "coupon_template_code_format"),
        ("code = 'CAFÉ1'", "coupon_template_code_format"),
        ("visibility = 'secret'", "coupon_template_visibility_known"),
        ("value = 0", "coupon_template_value_positive"),
        ("min_amount = 100", "coupon_template_min_amount_fits_type"),  # direct with a threshold
        ("type = 'threshold', min_amount = 499", "coupon_template_min_amount_fits_type"),
        ("total = 0", "coupon_template_total_positive"),
        ("per_user_limit = 0", "coupon_template_per_user_limit_positive"),
        ("valid_until = valid_from", "coupon_template_window_ordered"),
        ("claimed_count = total + 1", "coupon_template_claimed_within_total"),
    ],
)
def test_template_check_constraints_reject_bad_rows(assignment, constraint):
    template = CouponTemplateFactory()  # direct, value 500, valid row

    with pytest.raises(DatabaseError, match=constraint), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(f"UPDATE coupon_templates SET {assignment} WHERE id = %s", [template.pk])


@pytest.mark.parametrize(
    "assignment",
    [
        "status = 'used'",
        "used_at = NOW(3)",
        "status = 'expired'",
        "status = 'used', used_at = NULL",
    ],
)
def test_user_coupon_used_at_must_match_status(assignment):
    coupon = UserCouponFactory()

    with pytest.raises(DatabaseError, match="user_coupon_used_at_matches_status"):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"UPDATE user_coupons SET {assignment} WHERE id = %s", [coupon.pk])


@pytest.mark.parametrize(
    ("assignment", "constraint"),
    [
        ("valid_until = valid_from", "user_coupon_window_ordered"),
        ("source = 'grant'", "user_coupon_grant_reason_matches_source"),  # a grant says why
        ("grant_reason = 'because'", "user_coupon_grant_reason_matches_source"),  # a claim
        ("source = 'gift', grant_reason = 'x'", "user_coupon_grant_reason_matches_source"),
        ("granted_by_id = user_id", "user_coupon_granted_by_only_for_grants"),
    ],
)
def test_user_coupon_check_constraints_reject_bad_rows(assignment, constraint):
    coupon = UserCouponFactory()

    with pytest.raises(DatabaseError, match=constraint), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(f"UPDATE user_coupons SET {assignment} WHERE id = %s", [coupon.pk])


def test_codes_are_unique_without_regard_to_case():
    CouponTemplateFactory(code="Spring26")

    with pytest.raises(IntegrityError, match="coupon_template_code_unique"):
        with transaction.atomic():
            CouponTemplateFactory(code="SPRING26")


def test_one_grant_per_user_and_reason():
    first = UserCouponFactory(source="grant", grant_reason="late delivery")

    with pytest.raises(IntegrityError, match="user_coupon_one_grant_per_reason"):
        with transaction.atomic():
            UserCouponFactory(
                user=first.user,
                template=first.template,
                source="grant",
                grant_reason="late delivery",
            )
    # the same user may hold a second claim of the template, and a grant for another reason
    UserCouponFactory(user=first.user, template=first.template)
    UserCouponFactory(
        user=first.user, template=first.template, source="grant", grant_reason="birthday"
    )


def test_unsigned_columns_refuse_negative_values():
    template = CouponTemplateFactory()
    with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE coupon_templates SET value = -1 WHERE id = %s", [template.pk])


def test_a_good_row_passes_every_constraint():
    template = CouponTemplateFactory(type="threshold", value=500, min_amount=500)
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE coupon_templates SET claimed_count = total WHERE id = %s", [template.pk]
        )
    template.refresh_from_db()
    assert template.claimed_count == template.total


@pytest.mark.parametrize(
    ("assignment", "constraint"),
    [
        ("slot = 0", "user_coupon_slot_positive"),
        ("slot = 1", "user_coupon_template_user_slot"),  # the user's first coupon has slot 1
    ],
)
def test_a_users_coupons_of_a_template_take_distinct_slots_from_1(assignment, constraint):
    first = UserCouponFactory()
    second = UserCouponFactory(template=first.template, user=first.user)
    assert (first.slot, second.slot) == (1, 2)

    with pytest.raises(DatabaseError, match=constraint):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"UPDATE user_coupons SET {assignment} WHERE id = %s", [second.pk])
