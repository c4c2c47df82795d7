"""The discount rules of SPEC section 10, written once as pure functions: which lines of a cart a
coupon applies to, how much it takes off, and how that discount splits across the lines.

No database, no clock: checkout, the advisor and the tests all call these with plain values.
Money is integer cents and every division rounds down, so a shopper is never over-discounted."""

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

DIRECT = "direct"
THRESHOLD = "threshold"
PERCENT = "percent"


@dataclass(frozen=True)
class DiscountTerms:
    """What a coupon promises, as the discount table needs it."""

    type: str
    value: int  # cents off, or the percent off for `percent`
    min_amount: int  # threshold on the eligible subtotal; 0 = none
    max_discount: int | None  # cap in cents, `percent` only
    scope: str
    scope_ids: tuple[int, ...]
    # Left out of a store-wide or category coupon: not eligible, whatever the scope says.
    excluded_product_ids: tuple[int, ...] = ()
    excluded_category_ids: tuple[int, ...] = ()
    # The discount applies to one unit only: the cheapest eligible one.
    one_unit_only: bool = False


@dataclass(frozen=True)
class CartLine:
    """One line of a cart: the product, its category (None = uncategorised), its amount and
    the price of one unit (None: the line is one unit of `amount`)."""

    product_id: int
    category_id: int | None
    amount: int  # unit price x quantity, in cents
    unit_price: int | None = None

    @property
    def cheapest_unit(self) -> int:
        return self.amount if self.unit_price is None else self.unit_price


class CartRefusal(StrEnum):
    """Why a coupon does not apply to a cart."""

    NOT_APPLICABLE = "not_applicable"  # no line of the cart in the coupon's scope
    THRESHOLD_NOT_MET = "threshold_not_met"  # the eligible subtotal is short (`shortfall`)


@dataclass(frozen=True)
class CartJudgement:
    """A coupon judged against a cart. `reason` is None when it applies."""

    eligible_subtotal: int
    discount: int
    reason: CartRefusal | None
    shortfall: int | None
    line_discounts: tuple[int, ...]  # one per cart line, in the cart's order; sums to discount


def line_in_scope(terms: DiscountTerms, line: CartLine) -> bool:
    if line.product_id in terms.excluded_product_ids or (
        line.category_id is not None and line.category_id in terms.excluded_category_ids
    ):
        return False
    match terms.scope:
        case "all":
            return True
        case "categories":
            return line.category_id is not None and line.category_id in terms.scope_ids
        case "products":
            return line.product_id in terms.scope_ids
    raise ValueError(f"unknown scope {terms.scope!r}")


def discount_for(terms: DiscountTerms, eligible_subtotal: int) -> int:
    """The discount table: direct/threshold min(value, eligible); percent
    min(floor(eligible * value / 100), max_discount or no cap, eligible). The threshold is the
    caller's (judge_cart) to check first."""
    if terms.type == PERCENT:
        discount = eligible_subtotal * terms.value // 100
        if terms.max_discount is not None:
            discount = min(discount, terms.max_discount)
    else:
        discount = terms.value
    return min(discount, eligible_subtotal)


def split_largest_remainder(total: int, weights: Sequence[int]) -> list[int]:
    """Split `total` cents across `weights` in proportion, each part rounded down, then the
    cents left over handed one each to the parts with the largest remainders (ties to the
    earlier part). The parts add up to exactly `total`; a zero weight gets zero."""
    weight_sum = sum(weights)
    if total == 0 or weight_sum == 0:
        return [0] * len(weights)
    parts = [total * weight // weight_sum for weight in weights]
    remainders = [total * weight % weight_sum for weight in weights]
    left_over = total - sum(parts)
    by_remainder = sorted(range(len(weights)), key=lambda i: (-remainders[i], i))
    for index in by_remainder[:left_over]:
        parts[index] += 1
    return parts


def judge_cart(terms: DiscountTerms, lines: Sequence[CartLine]) -> CartJudgement:
    """Apply a coupon to a cart: the eligible subtotal (lines in scope, less what the coupon
    excludes), the threshold on it, the discount, and its split across the eligible lines; a
    one-unit-only coupon takes its discount off the cheapest eligible unit alone."""
    in_scope = [line_in_scope(terms, line) for line in lines]
    eligible = sum(line.amount for line, hit in zip(lines, in_scope, strict=True) if hit)
    no_discount = (0,) * len(lines)
    if not any(in_scope):
        return CartJudgement(eligible, 0, CartRefusal.NOT_APPLICABLE, None, no_discount)
    if eligible < terms.min_amount:
        shortfall = terms.min_amount - eligible
        return CartJudgement(eligible, 0, CartRefusal.THRESHOLD_NOT_MET, shortfall, no_discount)
    if terms.one_unit_only:
        # The whole discount on one unit, the cheapest eligible (the first line of that price).
        index = min(
            (i for i, hit in enumerate(in_scope) if hit), key=lambda i: lines[i].cheapest_unit
        )
        discount = discount_for(terms, lines[index].cheapest_unit)
        parts = [discount if i == index else 0 for i in range(len(lines))]
        return CartJudgement(eligible, discount, None, None, tuple(parts))
    discount = discount_for(terms, eligible)
    weights = [line.amount if hit else 0 for line, hit in zip(lines, in_scope, strict=True)]
    parts = split_largest_remainder(discount, weights)
    return CartJudgement(eligible, discount, None, None, tuple(parts))
