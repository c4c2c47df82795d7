"""The discount table of SPEC section 10 and the per-line split, at their edges. Pure functions:
no database needed."""

import pytest

from coupons.discounts import (
    CartLine,
    DiscountTerms,
    discount_for,
    judge_cart,
    split_largest_remainder,
)


def terms(type="direct", value=500, min_amount=0, max_discount=None, scope="all", scope_ids=()):
    return DiscountTerms(
        type=type,
        value=value,
        min_amount=min_amount,
        max_discount=max_discount,
        scope=scope,
        scope_ids=tuple(scope_ids),
    )


def line(product_id, amount, category_id=None):
    return CartLine(product_id=product_id, category_id=category_id, amount=amount)


@pytest.mark.parametrize(
    ("coupon", "eligible", "discount"),
    [
        (terms("direct", 500), 10000, 500),
        (terms("direct", 500), 300, 300),  # never more than the eligible subtotal
        (terms("threshold", 5000, 20000), 20000, 5000),
        (terms("percent", 15), 999, 149),  # 149.85 rounds down
        (terms("percent", 15), 6, 0),  # 0.9 rounds down to nothing
        (terms("percent", 99), 101, 99),  # 99.99 rounds down
        (terms("percent", 1), 10**12, 10**10),
        (terms("percent", 50, max_discount=3000), 10000, 3000),  # capped
        (terms("percent", 50, max_discount=3000), 6000, 3000),  # exactly at the cap
        (terms("percent", 50, max_discount=3000), 5998, 2999),  # under the cap
        (terms("percent", 10, max_discount=10**9), 500, 50),  # cap above the eligible subtotal
        (terms("percent", 99, max_discount=10**9), 1, 0),
        (terms("direct", 500), 0, 0),
    ],
)
def test_the_discount_table(coupon, eligible, discount):
    assert discount_for(coupon, eligible) == discount


@pytest.mark.parametrize(
    ("total", "weights", "parts"),
    [
        (100, [1, 1, 1], [34, 33, 33]),  # ties go to the earlier line
        (100, [3333, 3333, 3334], [33, 33, 34]),
        (1, [5, 5, 5], [1, 0, 0]),
        (10, [0, 7, 3], [0, 7, 3]),
        (7, [2, 0, 5], [2, 0, 5]),
        (0, [4, 5], [0, 0]),
        (999, [1, 2, 3, 4], [100, 200, 300, 399]),  # 99.9 199.8 299.7 399.6
        (500, [9900, 1500, 1], [434, 66, 0]),
    ],
)
def test_the_split_sums_exactly_with_largest_remainder(total, weights, parts):
    split = split_largest_remainder(total, weights)
    assert split == parts
    assert sum(split) == total


def test_a_cart_with_no_line_in_scope_is_not_applicable():
    coupon = terms("percent", 10, scope="categories", scope_ids=[7])

    judged = judge_cart(coupon, [line(1, 5000, category_id=8), line(2, 3000)])

    assert (judged.reason, judged.eligible_subtotal, judged.discount) == ("not_applicable", 0, 0)
    assert judged.line_discounts == (0, 0)


def test_the_threshold_compares_the_eligible_subtotal_not_the_order_total():
    coupon = terms("threshold", 1000, 5000, scope="products", scope_ids=[1])

    short = judge_cart(coupon, [line(1, 4999), line(2, 100000)])
    met = judge_cart(coupon, [line(1, 5000), line(2, 100000)])

    assert (short.reason, short.shortfall, short.discount) == ("threshold_not_met", 1, 0)
    assert (met.reason, met.discount, met.line_discounts) == (None, 1000, (1000, 0))


def test_percent_with_cap_and_threshold_on_a_scoped_cart():
    coupon = terms("percent", 20, 10000, max_discount=2500, scope="categories", scope_ids=[3])
    cart = [line(1, 9000, 3), line(2, 50000, 4), line(3, 4500, 3)]

    judged = judge_cart(coupon, cart)

    # eligible 13500: 20% is 2700, capped at 2500, split 9000:4500 -> 1666.67 / 833.33
    assert (judged.eligible_subtotal, judged.discount) == (13500, 2500)
    assert judged.line_discounts == (1667, 0, 833)


def test_three_lines_share_100_cents_exactly():
    coupon = terms("direct", 100)
    judged = judge_cart(coupon, [line(1, 1000), line(2, 1000), line(3, 1000)])
    assert judged.line_discounts == (34, 33, 33)
    assert sum(judged.line_discounts) == judged.discount == 100


def test_excluded_products_and_categories_are_out_of_the_threshold_and_the_split():
    """SPEC section 25: a store-wide coupon that excludes a flash-sale product and the gift
    cards category; only the rest counts toward its threshold and takes its discount."""
    coupon = DiscountTerms(
        type="threshold",
        value=1000,
        min_amount=10000,
        max_discount=None,
        scope="all",
        scope_ids=(),
        excluded_product_ids=(7,),
        excluded_category_ids=(9,),
    )
    flash, gift_card, tea, cup = line(7, 8000, 3), line(8, 5000, 9), line(1, 6000, 3), line(2, 3000)

    short = judge_cart(coupon, [flash, gift_card, tea, cup])  # 22000 in all, 9000 eligible
    met = judge_cart(coupon, [flash, gift_card, tea, cup, line(4, 1000)])

    assert (short.reason, short.eligible_subtotal, short.shortfall) == (
        "threshold_not_met",
        9000,
        1000,
    )
    assert (met.eligible_subtotal, met.discount) == (10000, 1000)
    assert met.line_discounts == (0, 0, 600, 300, 100)


@pytest.mark.parametrize(
    ("coupon", "discount", "parts"),
    [
        # 20% of the cheapest eligible unit (3000), not of the 18000 eligible
        (terms("percent", 20), 600, (0, 600, 0)),
        # a flat 1000 off one unit: never more than that unit's price
        (terms("direct", 1000), 1000, (0, 1000, 0)),
        (terms("direct", 5000), 3000, (0, 3000, 0)),
        # the cheapest unit among the lines in scope only (category 3: the 5000 units)
        (terms("percent", 10, scope="categories", scope_ids=[3]), 500, (500, 0, 0)),
    ],
)
def test_a_one_unit_only_coupon_takes_its_discount_off_the_cheapest_eligible_unit(
    coupon, discount, parts
):
    one_unit = DiscountTerms(**{**coupon.__dict__, "one_unit_only": True})
    cart = [
        CartLine(product_id=1, category_id=3, amount=15000, unit_price=5000),  # 3 x 5000
        CartLine(product_id=2, category_id=4, amount=3000, unit_price=3000),
        CartLine(product_id=3, category_id=4, amount=8000, unit_price=4000),  # 2 x 4000
    ]

    judged = judge_cart(one_unit, cart)

    assert (judged.discount, judged.line_discounts) == (discount, parts)
