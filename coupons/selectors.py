"""Every read of coupons that is more than one line."""

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, TypeAlias, TypedDict

from django.contrib.auth import get_user_model
from django.db.models import Count, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from core import clock
from core.limits import is_id_text
from coupons.coupon_status import CouponStatus
from coupons.errors import CouponNotFound, TemplateNotFound
from coupons.models import CouponTemplate, UserCoupon
from coupons.models.single_use_codes import SingleUseCode
from coupons.rules import ClaimState, claim_state
from coupons.terms import template_facts


class ShopperCounts(TypedDict):
    claimed_by_me: int


if TYPE_CHECKING:  # django-stubs' helper is a dev dependency: for mypy only
    from django_stubs_ext import WithAnnotations

    # A template of the shopper's list, with the calling user's claims.
    ShopperTemplate: TypeAlias = WithAnnotations[CouponTemplate, ShopperCounts]


def coupons_per_template(coupons: QuerySet[UserCoupon]) -> Coalesce:
    """How many of `coupons` belong to the outer template, as a correlated subquery."""
    counted = (
        coupons.filter(template=OuterRef("pk"))
        .order_by()
        .values("template")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return Coalesce(Subquery(counted), 0)


def templates_for_shopper(*, user_id: int) -> "QuerySet[ShopperTemplate]":
    """Every public template, newest first, with `claimed_by_me`: one query for any page
    size. Hidden templates are reachable only by code or grant, never listed, and so are
    templates with single-use codes (not claimable by id: SPEC section 18)."""
    claimed_by_me = coupons_per_template(UserCoupon.objects.filter(user_id=user_id))
    return (
        CouponTemplate.objects.filter(
            visibility=CouponTemplate.Visibility.PUBLIC, has_single_use_codes=False
        )
        .annotate(claimed_by_me=claimed_by_me)
        .order_by("-id")
    )


def template_state(template: CouponTemplate, *, now: datetime) -> ClaimState:
    """Everyone's view (the claim rule without a user): not_started, ended, sold_out, active."""
    return claim_state(template_facts(template), now=now, user_claims=None)


def shopper_state(
    template: CouponTemplate, *, claimed_by_me: int, has_paid_order: bool | None, now: datetime
) -> ClaimState:
    """The caller's view of a template, by the claim rule with the page's one `now`."""
    return claim_state(
        template_facts(template),
        now=now,
        user_claims=claimed_by_me,
        has_paid_order=has_paid_order,
    )


def single_use_codes_of(*, template_id: int) -> QuerySet[SingleUseCode]:
    """A template's single-use codes in creation order, on the (template_id, id) index."""
    if not CouponTemplate.objects.filter(pk=template_id).exists():
        raise TemplateNotFound()
    return SingleUseCode.objects.filter(template_id=template_id).order_by("id")


MINE_STATUSES = tuple(CouponStatus.values)


def coupons_of_user(*, user_id: int, status: str | None, now: datetime) -> QuerySet[UserCoupon]:
    """The user's coupons with their templates, newest first, filtered by derived status:
    expired = stored unused and now past the coupon's own valid_until.

    Templates come by prefetch (one more query for the page), not a join: with a join MariaDB
    may drive the query from coupon_templates and sort every coupon the user holds (13 ms for
    a user with 10,000 coupons), where alone it walks (user_id, status, id) and stops after
    one page (2 ms)."""
    coupons = (
        UserCoupon.objects.filter(user_id=user_id).prefetch_related("template").order_by("-id")
    )
    if status is None:
        return coupons
    return coupons.with_status(CouponStatus(status), now=now)


def coupon_of_user(*, user_id: int, coupon_id: int) -> UserCoupon:
    """One of the user's coupons with its template; CouponNotFound for anyone else's."""
    coupon = (
        UserCoupon.objects.filter(pk=coupon_id, user_id=user_id).select_related("template").first()
    )
    if coupon is None:
        raise CouponNotFound()
    return coupon


def derived_status(coupon: UserCoupon, *, now: datetime) -> str:
    """The coupon's status at `now` (UserCoupon.status_at: the one rule,
    coupons/models/user_coupons.py)."""
    return coupon.status_at(now).value


@dataclass(frozen=True)
class UserLookup:
    user_ids: list[int]  # in the order given; ids are not checked here (grants report them)
    unknown_usernames: list[str]


def users_by_name_or_id(entries: list[str]) -> UserLookup:
    """Resolve grant lists typed by staff: a line of ASCII digits is a user id, anything else
    a username (looked up in one query)."""

    names = [entry for entry in entries if not is_id_text(entry)]
    id_by_name = dict(
        get_user_model().objects.filter(username__in=names).values_list("username", "pk")
    )
    user_ids, unknown = [], []
    for entry in entries:
        if is_id_text(entry):
            user_ids.append(int(entry))
        elif entry in id_by_name:
            user_ids.append(id_by_name[entry])
        else:
            unknown.append(entry)
    return UserLookup(user_ids, unknown)


def recent_claims(*, template_id: int, limit: int = 10) -> list[UserCoupon]:
    """The template's newest coupons with their users (one query)."""
    return list(
        UserCoupon.objects.filter(template_id=template_id)
        .select_related("user")
        .order_by("-id")[:limit]
    )


@dataclass(frozen=True)
class CodeCounts:
    created: int
    used: int


def single_use_code_counts(*, template_id: int) -> CodeCounts:
    """How many single-use codes the template has and how many were spent (one query on the
    (template_id, id) index)."""
    counts = SingleUseCode.objects.filter(template_id=template_id).aggregate(
        created=Count("pk"), used=Count("pk", filter=Q(used_at__isnull=False))
    )
    return CodeCounts(created=counts["created"], used=counts["used"])


def template_records(
    *,
    template_id: int,
    user: str = "",
    coupon_ids: list[int] | None = None,
    status: CouponStatus | None = None,
    source: str | None = None,
    now: datetime | None = None,
) -> QuerySet[UserCoupon]:
    """The template's coupons, newest first, with their users: every claim and use (the
    admin's 领取/使用记录). `user` matches a user: digits are a user id (or a username that
    is digits), anything else a part of a username. `coupon_ids` keeps only those coupons
    (an order's, which the caller found); `status` (unused, used, expired at `now`) and
    `source` (claim, code, grant) filter."""
    coupons = UserCoupon.objects.filter(template_id=template_id).select_related("user")
    user = user.strip()
    if is_id_text(user):
        coupons = coupons.filter(Q(user_id=int(user)) | Q(user__username=user))
    elif user:
        coupons = coupons.filter(user__username__icontains=user)
    if coupon_ids is not None:
        coupons = coupons.filter(pk__in=coupon_ids)
    if status is not None:
        coupons = coupons.with_status(status, now=now or clock.now())
    if source is not None:
        coupons = coupons.filter(source=source)
    return coupons.order_by("-id")
