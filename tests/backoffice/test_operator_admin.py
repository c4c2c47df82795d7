"""The operator's admin (SPEC section 13): money, time zone, funnel, chart, export, user coupons."""

import csv
import io
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.contrib.admin.models import LogEntry
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from backoffice import reports
from backoffice.audit_messages import audit_message
from coupons.models import CouponTemplate, UserCoupon
from coupons.services import grants as grants_service
from orders import services as order_services
from tests.support.factories import (
    CouponTemplateFactory,
    PaidOrderFactory,
    ProductFactory,
    UserCouponFactory,
    UserFactory,
)
from tests.support.staff_jobs import records_csv

pytestmark = pytest.mark.django_db

LIST_URL = "/admin/coupons/coupontemplate/"


# --- Money --------------------------------------------------------------------------------------


def test_bad_money_in_the_template_form_is_a_form_error_naming_the_field(admin_site):
    from tests.support.admin_forms import form_data

    response = admin_site.post(LIST_URL + "add/", form_data(value="10.001", min_amount="abc"))

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert errors["value"] == ["Use at most two decimal places (whole cents)."]
    assert errors["min_amount"] == ["Enter an amount such as 50.00."]


# --- The template list: funnel columns at a constant query count --------------------------------


def claimed_at(coupon: UserCoupon, moment: datetime) -> UserCoupon:
    """created_at is stamped by the database layer's clock, not core.clock: set it."""
    UserCoupon.objects.filter(pk=coupon.pk).update(created_at=moment)
    coupon.refresh_from_db()
    return coupon


def make_funnel_template(*, name: str, claimed: int, used: int, ended: bool = False):
    template = CouponTemplateFactory(name=name, total=10, value=5000)
    coupons = [UserCouponFactory(template=template) for _ in range(claimed)]
    for coupon in coupons[:used]:  # used by an order paid for: what counts as used
        UserCoupon.objects.filter(pk=coupon.pk).update(
            status=UserCoupon.Status.USED, used_at=coupon.created_at
        )
        PaidOrderFactory(user=coupon.user, coupon=coupon)
    if ended:  # the coupons' own use windows decide what expired (SPEC section 10)
        UserCoupon.objects.filter(template=template).update(
            valid_from=template.valid_from - timedelta(days=5),
            valid_until=template.valid_from - timedelta(days=1),
        )
    return template


def test_the_list_shows_the_funnel_of_each_template(admin_site):
    make_funnel_template(name="Running", claimed=4, used=1)
    make_funnel_template(name="Finished", claimed=3, used=1, ended=True)

    response = admin_site.get(LIST_URL)

    rows = {
        template.name: (
            template.claimed_count,
            template.used_count,
            template.expired_count,
        )
        for template in response.context["cl"].result_list
    }
    assert rows == {"Running": (4, 1, 0), "Finished": (3, 1, 2)}
    page = response.content.decode()
    assert '<td class="field-claimed_of_total">4 / 10</td>' in page
    assert '<td class="field-redemption_rate">25.0%</td>' in page
    assert '<td class="field-redemption_rate">33.3%</td>' in page
    assert '<td class="field-expired">2</td>' in page
    assert "¥50.00 off" in page


def test_the_list_costs_the_same_queries_for_one_row_and_many(admin_site):
    make_funnel_template(name="Only", claimed=2, used=1)
    with CaptureQueriesContext(connection) as one_row:
        assert admin_site.get(LIST_URL).status_code == 200
    for index in range(6):
        make_funnel_template(name=f"More {index}", claimed=2, used=1, ended=index % 2 == 0)

    with CaptureQueriesContext(connection) as seven_rows:
        response = admin_site.get(LIST_URL)

    assert len(response.context["cl"].result_list) == 7
    assert len(seven_rows.captured_queries) == len(one_row.captured_queries)


def test_the_list_query_count_is_pinned(admin_site, django_assert_num_queries):
    for index in range(3):
        make_funnel_template(name=f"T{index}", claimed=1, used=1)

    # session, user, filtered count, full count, the campaigns of the campaign filter, the page
    # with its funnel subqueries and campaigns joined
    with django_assert_num_queries(6):
        admin_site.get(LIST_URL)


# --- The template page ------------------------------------------------------------------------


def test_the_template_page_shows_funnel_chart_recent_claims_and_orders(admin_site, frozen_now):
    now = frozen_now(datetime(2026, 6, 10, 12, 0, tzinfo=UTC))
    template = CouponTemplateFactory(
        name="Page", value=500, valid_from=now - timedelta(days=3), valid_until=now + timedelta(5)
    )
    shopper = UserFactory(username="shopper-one")
    first = claimed_at(UserCouponFactory(template=template, user=shopper), now - timedelta(days=2))
    claimed_at(UserCouponFactory(template=template), now)
    product = ProductFactory(price=2000)
    order = order_services.order_checkout(
        user_id=shopper.pk, items=[{"product_id": product.pk, "quantity": 1}], coupon_id=first.pk
    )
    order_services.order_pay(user_id=shopper.pk, order_id=order.pk, amount=order.pay_amount)

    response = admin_site.get(f"{LIST_URL}{template.pk}/change/")

    context = response.context
    funnel = context["funnel"]
    assert (funnel.claimed, funnel.total, funnel.used, funnel.expired) == (2, 100, 1, 0)
    assert context["redemption_rate"] == "50.0%"
    page = response.content.decode()
    assert '<rect class="bar" data-series="claims" data-day="2026-06-08" data-count="1"' in page
    assert '<rect class="bar" data-series="claims" data-day="2026-06-10" data-count="1"' in page
    assert '<rect class="bar" data-series="uses" data-day="2026-06-10" data-count="1"' in page
    assert [row["coupon"].user.username for row in context["recent_claims"]][1] == "shopper-one"
    assert [row["order"].order_id for row in context["orders"]] == [order.pk]
    assert f'href="/admin/orders/order/{order.pk}/change/"' in page
    assert context["export_url"] == f"{LIST_URL}{template.pk}/records/export/"
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "")  # nothing fetched


def test_activity_per_day_counts_in_the_configured_time_zone(frozen_now):
    shanghai = ZoneInfo("Asia/Shanghai")
    now = frozen_now(datetime(2026, 6, 10, 12, 0, tzinfo=UTC))
    template = CouponTemplateFactory(
        valid_from=now - timedelta(days=2), valid_until=now + timedelta(days=1)
    )
    # 17:00 UTC on June 9 is 01:00 on June 10 in Shanghai.
    claimed_at(UserCouponFactory(template=template), datetime(2026, 6, 9, 17, 0, tzinfo=UTC))

    in_utc = reports.template_activity_per_day(template, now=now, zone=UTC)
    in_shanghai = reports.template_activity_per_day(template, now=now, zone=shanghai)

    assert [(d.day, d.claims) for d in in_utc] == [
        (date(2026, 6, 8), 0),
        (date(2026, 6, 9), 1),
        (date(2026, 6, 10), 0),
    ]
    assert [(d.day, d.claims) for d in in_shanghai] == [
        (date(2026, 6, 8), 0),
        (date(2026, 6, 9), 0),
        (date(2026, 6, 10), 1),
    ]


def test_times_are_shown_in_the_configured_time_zone(admin_site, settings):
    settings.TIME_ZONE = "Asia/Shanghai"
    CouponTemplateFactory(
        name="Zoned",
        valid_from=datetime(2026, 6, 1, 16, 30, tzinfo=UTC),
        valid_until=datetime(2026, 6, 3, 16, 30, tzinfo=UTC),
    )

    page = admin_site.get(LIST_URL).content.decode()

    assert "06/02/2026 12:30 a.m." in page  # 16:30 UTC is 00:30 the next day in Shanghai


def test_export_streams_every_coupon_as_csv(admin_site, frozen_now, settings):
    settings.TIME_ZONE = "Asia/Shanghai"
    now = frozen_now(datetime(2026, 6, 10, 12, 0, tzinfo=UTC))
    template = CouponTemplateFactory(valid_from=now - timedelta(days=1))
    other = CouponTemplateFactory()
    shoppers = [UserFactory(username=f"csv-{index}") for index in range(3)]
    coupons = [
        claimed_at(UserCouponFactory(template=template, user=shopper), now) for shopper in shoppers
    ]
    UserCouponFactory(template=other)
    order = order_services.order_checkout(
        user_id=shoppers[1].pk,
        items=[{"product_id": ProductFactory(price=900).pk, "quantity": 1}],
        coupon_id=coupons[1].pk,
    )
    order_services.order_pay(user_id=order.user_id, order_id=order.pk, amount=order.pay_amount)

    body = records_csv(admin_site, template.pk)

    assert body.startswith(b"\xef\xbb\xbf")  # the BOM that makes Excel read UTF-8
    rows = list(csv.reader(io.StringIO(body.decode("utf-8-sig"))))
    assert rows == [
        [
            "coupon id",
            "template",
            "user id",
            "username",
            "source",
            "status",
            "claimed at",
            "valid until",
            "used at",
            "order id",
            "grant reason",
            "granted by",
        ],
        *[
            [
                str(coupon.pk),
                template.name,
                str(coupon.user_id),
                coupon.user.username,
                "claim",
                "used" if coupon == coupons[1] else "unused",
                "2026-06-10 20:00:00",
                timezone.localtime(coupon.valid_until).strftime("%Y-%m-%d %H:%M:%S"),
                "2026-06-10 20:00:00" if coupon == coupons[1] else "",
                str(order.pk) if coupon == coupons[1] else "",
                "",
                "",
            ]
            for coupon in coupons
        ],
    ]


def test_only_coupons_of_paid_orders_count_as_used_in_the_rate_and_the_csv(admin_site):
    """Issue 21: a coupon an unpaid order holds counted as used in 核销率 and the CSV."""
    template = CouponTemplateFactory(total=10)
    paid, pending, cancelled, unused = (UserCouponFactory(template=template) for _ in range(4))
    product = ProductFactory(price=2000, stock=10)

    def checkout(coupon):
        return order_services.order_checkout(
            user_id=coupon.user_id,
            items=[{"product_id": product.pk, "quantity": 1}],
            coupon_id=coupon.pk,
        )

    order = checkout(paid)
    order_services.order_pay(user_id=order.user_id, order_id=order.pk, amount=order.pay_amount)
    checkout(pending)
    gone = checkout(cancelled)
    order_services.order_cancel(user_id=gone.user_id, order_id=gone.pk)

    listed = admin_site.get(LIST_URL)
    page = admin_site.get(f"{LIST_URL}{template.pk}/change/")
    body = records_csv(admin_site, template.pk)

    [row] = listed.context["cl"].result_list
    assert row.used_count == 1
    assert '<td class="field-redemption_rate">25.0%</td>' in listed.content.decode()
    assert (page.context["funnel"].used, page.context["redemption_rate"]) == (1, "25.0%")
    rows = list(csv.DictReader(io.StringIO(body.decode("utf-8-sig"))))
    assert {int(r["coupon id"]): r["status"] for r in rows} == {
        paid.pk: "used",
        pending.pk: "used, order not paid",
        cancelled.pk: "unused",
        unused.pk: "unused",
    }


def test_export_in_chinese_names_the_grant_and_the_granter(admin_site, staff):
    template = CouponTemplateFactory(name="春季促销")
    grantee = UserFactory(username="张三")
    grants_service.coupon_grant(
        template_id=template.pk, user_ids=[grantee.pk], reason="补偿", granted_by_id=staff.pk
    )

    body = records_csv(admin_site, template.pk, HTTP_ACCEPT_LANGUAGE="zh-hans")

    assert body.startswith(b"\xef\xbb\xbf")
    header, row = csv.reader(io.StringIO(body.decode("utf-8-sig")))
    assert header[:6] == ["优惠券 ID", "模板", "用户 ID", "用户名", "来源", "状态"]
    assert header[-2:] == ["发放原因", "发放人"]
    assert row[1] == "春季促销" and row[3] == "张三" and row[4] == "发放"
    assert row[-2:] == ["补偿", staff.username]
    assert "." not in row[6]  # whole seconds


def test_export_reads_in_batches(admin_site, monkeypatch):
    from backoffice.coupon_admin import template_report as coupons_admin

    monkeypatch.setattr(coupons_admin, "CSV_BATCH_SIZE", 2)
    template = CouponTemplateFactory()
    coupons = [UserCouponFactory(template=template) for _ in range(5)]

    with CaptureQueriesContext(connection) as queries:
        rows = list(csv.reader(io.StringIO(records_csv(admin_site, template.pk).decode())))

    assert [int(row[0]) for row in rows[1:]] == [coupon.pk for coupon in coupons]
    coupon_pages = [
        q for q in queries.captured_queries if "ORDER BY `user_coupons`.`id` ASC LIMIT" in q["sql"]
    ]
    assert len(coupon_pages) == 4  # 2 + 2 + 1, then the empty page that ends it


def test_export_of_an_unknown_template_is_an_admin_404_page(admin_site):
    response = admin_site.post(f"{LIST_URL}999999/records/export/")

    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")
    assert "There is nothing at this address." in response.content.decode()


# --- User coupons -----------------------------------------------------------------------------


def test_user_coupons_are_browsable_read_only(admin_site, frozen_now):
    coupon = UserCouponFactory(user=UserFactory(username="reader"))

    listed = admin_site.get("/admin/coupons/usercoupon/?status=unused&q=reader")
    shown = admin_site.get(f"/admin/coupons/usercoupon/{coupon.pk}/change/")
    posted = admin_site.post(f"/admin/coupons/usercoupon/{coupon.pk}/change/", {})

    assert [c.pk for c in listed.context["cl"].result_list] == [coupon.pk]
    assert shown.status_code == 200
    assert admin_site.get("/admin/coupons/usercoupon/add/").status_code == 403
    assert posted.status_code == 403
    assert admin_site.post(f"/admin/coupons/usercoupon/{coupon.pk}/delete/").status_code == 403


def test_a_coupon_links_to_the_order_that_used_it_and_back(admin_site, user):
    coupon = UserCouponFactory(user=user)
    order = order_services.order_checkout(
        user_id=user.pk,
        items=[{"product_id": ProductFactory(price=900).pk, "quantity": 1}],
        coupon_id=coupon.pk,
    )

    coupon_page = admin_site.get(f"/admin/coupons/usercoupon/{coupon.pk}/change/")
    order_list = admin_site.get("/admin/orders/order/")

    assert f'<a href="/admin/orders/order/{order.pk}/change/">#{order.pk}' in (
        coupon_page.content.decode()
    )
    assert f'<a href="/admin/coupons/usercoupon/{coupon.pk}/change/">#{coupon.pk}</a>' in (
        order_list.content.decode()
    )


def test_the_user_page_shows_their_newest_coupons_inline(admin_site, monkeypatch):
    from backoffice.coupon_admin.user_coupons import UserCouponInline

    monkeypatch.setattr(UserCouponInline, "shown", 2)
    user = UserFactory()
    coupons = [UserCouponFactory(user=user) for _ in range(3)]

    response = admin_site.get(f"/admin/auth/user/{user.pk}/change/")

    formset = next(
        f for f in response.context["inline_admin_formsets"] if f.opts.model is UserCoupon
    )
    assert [form.instance.pk for form in formset.formset.forms] == [
        coupons[2].pk,
        coupons[1].pk,
    ]


# --- Language, errors, "View site" ------------------------------------------------------------


def test_the_admin_speaks_chinese_when_asked(admin_site):
    make_funnel_template(name="Any", claimed=1, used=1)

    page = admin_site.get(LIST_URL, HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()

    assert "核销率" in page  # redemption rate, our own translation
    assert "优惠券模板" in page or "站点管理" in page or "首页" in page  # Django's own


def test_api_details_follow_accept_language_and_codes_do_not(shopper_client):
    english = shopper_client.post("/api/coupons/999999/claim")
    chinese = shopper_client.post("/api/coupons/999999/claim", HTTP_ACCEPT_LANGUAGE="zh-hans")

    assert english.json() == {"code": "not_found", "detail": "Coupon template not found."}
    assert chinese.json() == {"code": "not_found", "detail": "未找到该优惠券模板。"}


def test_every_domain_error_detail_has_a_chinese_translation():
    from django.utils import translation

    from core.domain_errors import DomainError

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    untranslated = []
    with translation.override("zh-hans"):
        for error in subclasses(DomainError):
            detail = str(error.default_detail)
            if detail.isascii():
                untranslated.append(f"{error.__module__}.{error.__name__}: {detail}")

    assert untranslated == []


def test_a_bad_admin_filter_answers_an_admin_page_not_json(admin_site):
    response = admin_site.get(LIST_URL + "?user_coupons__user__password__startswith=x")

    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/html")
    assert "<title>Bad request | Coupons admin</title>" in response.content.decode()


def test_an_unknown_admin_address_is_an_admin_page_and_the_api_stays_json(admin_site):
    admin_page = admin_site.get("/admin/coupons/nothing-here/")
    api = admin_site.get("/api/nothing-here")

    assert admin_page.status_code == 404
    assert "There is nothing at this address." in admin_page.content.decode()
    assert api.json() == {"code": "not_found", "detail": "Not found."}


def test_view_site_leads_to_the_api_docs(admin_site):
    page = admin_site.get("/admin/dashboard/").content.decode()

    assert '<a href="/api/docs/" id="view-site">' in page


# --- Grants from the template page and the user list --------------------------------------------


def test_grant_from_the_template_page(admin_site, staff):
    template = CouponTemplateFactory(total=5)
    alice, bob = UserFactory(username="g-alice"), UserFactory(username="g-bob")
    url = f"{LIST_URL}{template.pk}/grant/"

    page = admin_site.get(url)
    response = admin_site.post(
        url,
        {
            "users": f"g-alice\n{bob.pk}\nnobody",
            "reason": "apology",
            "action": "grant_to_users",
            "apply": "1",
        },
    )

    assert page.status_code == 200
    assert response.status_code == 302
    assert response["Location"] == f"{LIST_URL}{template.pk}/change/"
    granted = UserCoupon.objects.filter(template=template).order_by("user_id")
    assert [(c.user_id, c.source, c.grant_reason, c.granted_by_id) for c in granted] == [
        (alice.pk, "grant", "apology", staff.pk),
        (bob.pk, "grant", "apology", staff.pk),
    ]
    change_page = admin_site.get(f"{LIST_URL}{template.pk}/change/").content.decode()
    assert f'href="{url}"' in change_page


def test_grant_from_the_user_list(admin_site, staff):
    template = CouponTemplateFactory(total=1)
    first, second = UserFactory(), UserFactory()
    data = {"action": "grant_coupon_to_users", "_selected_action": [first.pk, second.pk]}

    form_page = admin_site.post("/admin/auth/user/", data)
    done = admin_site.post(
        "/admin/auth/user/",
        data | {"apply": "1", "template": template.pk, "reason": "launch"},
        follow=True,
    )

    assert form_page.status_code == 200
    assert "Grant a coupon to 2 users" in form_page.content.decode()
    messages = [str(message) for message in done.context["messages"]]
    assert messages == [
        f"Grant of {template.name}: granted: {first.username}; sold out: {second.username}."
    ]
    history = LogEntry.objects.get(object_id=str(template.pk))
    assert (history.user_id, audit_message(history)) == (
        staff.pk,
        "Granted to 2 users, reason “launch”: granted: 1; sold out: 1.",
    )
    assert list(UserCoupon.objects.filter(template=template).values_list("user_id", "source")) == [
        (first.pk, "grant")
    ]


def test_a_grant_without_a_reason_is_a_form_error_and_grants_nothing(admin_site):
    template = CouponTemplateFactory()
    user = UserFactory()

    response = admin_site.post(
        "/admin/auth/user/",
        {
            "action": "grant_coupon_to_users",
            "_selected_action": [user.pk],
            "apply": "1",
            "template": template.pk,
            "reason": "",
        },
    )

    assert response.status_code == 200
    assert response.context["form"].errors == {"reason": ["This field is required."]}
    assert UserCoupon.objects.count() == 0


def test_a_percent_coupon_takes_its_value_as_a_percent_and_its_cap_as_money(admin_site):
    from tests.support.admin_forms import form_data

    bad = admin_site.post(
        LIST_URL + "add/", form_data(type="percent", value="15.5", min_amount="", name="Bad")
    )
    response = admin_site.post(
        LIST_URL + "add/",
        form_data(type="percent", value="15", min_amount="", max_discount="20.00", name="Pct"),
    )

    assert bad.context["adminform"].form.errors["value"] == ["A whole percent, 1 to 99."]
    assert response.status_code == 302
    template = CouponTemplate.objects.get()
    assert (template.type, template.value, template.max_discount) == ("percent", 15, 2000)
    listed = admin_site.get(LIST_URL).content.decode()
    assert '<td class="field-terms">15% off, 85折, at most ¥20.00</td>' in listed
    in_chinese = admin_site.get(LIST_URL, HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert '<td class="field-terms">减 15%（85折），最多 ¥20.00</td>' in in_chinese
    shown = admin_site.get(f"{LIST_URL}{template.pk}/change/")
    assert shown.context["adminform"].form.initial["value"] == "15"
