"""Every read of coupons that is more than one line."""

from django.db.models import Count, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce

from coupons.errors import TemplateNotFound
from coupons.models import CouponTemplate, UserCoupon


def templates_for_admin() -> QuerySet[CouponTemplate]:
    """Templates, newest first, each with `used_count` from one correlated subquery."""
    used = (
        UserCoupon.objects.filter(template=OuterRef("pk"), status=UserCoupon.Status.USED)
        .order_by()
        .values("template")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return CouponTemplate.objects.annotate(used_count=Coalesce(Subquery(used), 0)).order_by("-id")


def template_for_admin(template_id: int) -> CouponTemplate:
    template = templates_for_admin().filter(pk=template_id).first()
    if template is None:
        raise TemplateNotFound()
    return template
