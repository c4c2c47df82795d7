"""Create the demo data once (idempotent) and print how to log in. Never in production: the
demo users' password is published (SPEC section 19)."""

import os
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from accounts.demo_users import DEMO_PASSWORD, DEMO_USERS
from core import clock
from coupons.catalog import scope_catalog
from coupons.models import CouponTemplate
from coupons.services import grants, templates
from coupons.services.campaigns import campaign_create

# The demo is a shop in China (SPEC section 23): its data is in Chinese, as an operator there
# would enter it. The API docs' examples name these rows by id (tests/api/test_demo_walkthrough.py).
CLAIMABLE_DEMO = "无门槛立减5元"


def how_to_use(base: str, *, claimable_id: int) -> str:
    """What `make run` prints: the addresses and the README's curl lines, with the real port
    and the id of a demo template open for claims."""
    login = f'{{"username": "alice", "password": "{DEMO_PASSWORD}"}}'
    read_access = "python3 -c 'import sys,json; print(json.load(sys.stdin)[\"access\"])'"
    return "\n".join(
        [
            f"  API docs:  {base}/api/docs/",
            f"  Admin:     {base}/admin/  (admin / {DEMO_PASSWORD})",
            f"  Health:    {base}/healthz",
            f"  Logins:    admin (staff), alice, bob; password {DEMO_PASSWORD}",
            f"  Times:     shown in {settings.TIME_ZONE} (TIME_ZONE to change)",
            f"  Redis:     keys under {settings.COUPON_REDIS_PREFIX or '(no prefix)'}",
            "  Try it (the README's lines, with this port):",
            f"    TOKEN=$(curl -s -X POST {base}/api/auth/token -H 'Content-Type: application/json'"
            f" -d '{login}' | {read_access})",
            f'    curl -H "Authorization: Bearer $TOKEN" {base}/api/coupons',
            f'    curl -X POST -H "Authorization: Bearer $TOKEN"'
            f" {base}/api/coupons/{claimable_id}/claim",
            f'    curl -H "Authorization: Bearer $TOKEN" "{base}/api/coupons/mine?status=unused"',
            "  Unpaid orders expire by themselves (the scheduler runs beside the server).",
        ]
    )


class Command(BaseCommand):
    help = "Create a staff user, two shoppers and a few coupon templates, once."

    def handle(self, *args, **options):
        if not settings.DEMO_DATA_ALLOWED:
            raise CommandError(
                "seed_demo refuses to run under production settings: it creates a superuser "
                f"whose password ({DEMO_PASSWORD!r}) is published in the README. Create the "
                "first admin with `python manage.py createsuperuser` instead."
            )
        with transaction.atomic():
            created = self.seed()
        if created:  # outside the transaction, as the issuing core asks
            self.grant_demo()
        port = os.environ.get("PORT", "8000")
        claimable = CouponTemplate.objects.filter(name=CLAIMABLE_DEMO).order_by("pk").first()
        self.stdout.write(
            "Demo data "
            + ("created." if created else "already present.")
            + "\n"
            + how_to_use(f"http://127.0.0.1:{port}", claimable_id=claimable.pk if claimable else 1)
        )

    def seed(self) -> bool:
        User = get_user_model()
        if User.objects.filter(username="admin").exists():
            return False
        for username, staff in DEMO_USERS:
            User.objects.create_user(
                username=username, password=DEMO_PASSWORD, is_staff=staff, is_superuser=staff
            )
        now = clock.now()
        day = timedelta(days=1)
        demo_templates = [
            (CLAIMABLE_DEMO, CouponTemplate.Type.DIRECT, 500, 0, now - day, now + 30 * day),
            (
                "满200减50",
                CouponTemplate.Type.THRESHOLD,
                5000,
                20000,
                now - day,
                now + 7 * day,
            ),
            (
                "下周上线：立减10元",
                CouponTemplate.Type.DIRECT,
                1000,
                0,
                now + 7 * day,
                now + 14 * day,
            ),
            (
                "上月已结束：立减3元",
                CouponTemplate.Type.DIRECT,
                300,
                0,
                now - 40 * day,
                now - 10 * day,
            ),
        ]
        for name, kind, value, min_amount, valid_from, valid_until in demo_templates:
            templates.coupon_template_publish(
                name=name,
                type=kind,
                value=value,
                min_amount=min_amount,
                total=100,
                per_user_limit=2,
                valid_from=valid_from,
                valid_until=valid_until,
            )
        self.seed_kinds(now=now, day=day)
        return True

    def seed_kinds(self, *, now, day) -> None:
        """One template of each kind of SPEC sections 10-11, and a grant to bob."""
        window = {"valid_from": now - day, "valid_until": now + 30 * day, "total": 100}
        templates.coupon_template_publish(
            name="满100打85折，最多减30元",
            type="percent",
            value=15,
            min_amount=10000,
            max_discount=3000,
            **window,
        )
        templates.coupon_template_publish(
            name="新人礼：立减10元，领取后7天有效（券码 WELCOME7）",
            type="direct",
            value=1000,
            valid_days=7,
            code="WELCOME7",
            **window,
        )
        templates.coupon_template_publish(
            name="VIP 7折（隐藏，券码 VIP-ONLY）",
            type="percent",
            value=30,
            max_discount=5000,
            code="VIP-ONLY",
            visibility="hidden",
            **window,
        )
        templates.coupon_template_publish(
            name="发货延迟补偿：立减20元（隐藏，定向发放）",
            type="direct",
            value=2000,
            visibility="hidden",
            valid_days=14,
            **window,
        )
        # Issued by events (SPEC section 28): to each account created from now on, and to the
        # buyer of each order paid with 200 or more.
        templates.coupon_template_publish(
            name="注册礼：立减8元（隐藏，注册赠券）",
            type="direct",
            value=800,
            visibility="hidden",
            auto_issue="signup",
            **window,
        )
        templates.coupon_template_publish(
            name="满200返20元（隐藏，购物赠券）",
            type="threshold",
            value=2000,
            min_amount=10000,
            visibility="hidden",
            per_user_limit=10,
            auto_issue="paid_order",
            auto_issue_min_pay=20000,
            **window,
        )
        # A campaign with a budget of 1,000 (SPEC section 27) over two of the templates above.
        campaign_create(
            name="演示活动：优惠预算1,000元",
            starts_at=now - day,
            ends_at=now + 30 * day,
            budget=100_000,
            template_ids=CouponTemplate.objects.filter(
                name__in=["满200减50", "满100打85折，最多减30元"]
            ).values_list("pk", flat=True),
        )
        catalog = scope_catalog()
        categories = {name: pk for pk, name in (catalog.categories() if catalog else {}).items()}
        if "茶品" in categories:
            templates.coupon_template_publish(
                name="茶品8折",
                type="percent",
                value=20,
                scope="categories",
                scope_ids=[categories["茶品"]],
                **window,
            )
        if "厨具" in categories:
            templates.coupon_template_publish(
                name="厨具满250减50",
                type="threshold",
                value=5000,
                min_amount=25000,
                scope="categories",
                scope_ids=[categories["厨具"]],
                **window,
            )

    def grant_demo(self) -> None:
        User = get_user_model()
        sorry = CouponTemplate.objects.get(name__startswith="发货延迟补偿")
        grants.coupon_grant(
            template_id=sorry.pk,
            user_ids=[User.objects.get(username="bob").pk],
            reason="演示：订单延迟送达",
            granted_by_id=User.objects.get(username="admin").pk,
        )
