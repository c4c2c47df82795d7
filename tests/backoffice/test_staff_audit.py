"""Issue 21: one audit trail of every staff action from any door (admin, API, command): who,
when, what and how much, recorded once by the service, shown in the object's admin history
and on the admin's log page (read-only, searchable, filtered by action and date, in zh-hans)."""

import html
import re
from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.admin.models import LogEntry
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone, translation

from backoffice.audit_messages import audit_message
from backoffice.staff_actions import StaffAction, staff_audit
from core import clock
from coupons.models import CouponTemplate, UserCoupon
from coupons.services import templates
from orders import services, stock
from orders.models import Category, Product
from tests.support.admin_users import VIEW_ONLY
from tests.support.browser import english_words
from tests.support.clients import bearer_client
from tests.support.factories import CouponTemplateFactory, ProductFactory, UserFactory
from tests.support.staff_matrix import acting_staff, recorded, state, world

pytestmark = pytest.mark.django_db
LOG_PAGE = "/admin/admin/logentry/"
ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}


def texts_of(page: str, element_id: str) -> list[str]:
    """The text inside the element with this id (up to its form), tags dropped."""
    start = page.index(">", page.index(f'id="{element_id}"')) + 1
    part = page[start : page.find("</form>", start) if "</form>" in page[start:] else None]
    return [html.unescape(text).strip() for text in re.split(r"<[^>]+>", part) if text.strip()]


def test_a_pause_is_recorded_once_from_each_door(client, staff):
    template = CouponTemplateFactory(name="Door test")
    client.force_login(staff)

    bearer_client(staff).post(f"/api/admin/coupons/{template.pk}/pause")
    bearer_client(staff).post(f"/api/admin/coupons/{template.pk}/resume")
    client.post(
        "/admin/coupons/coupontemplate/",
        {"action": "pause_templates", "_selected_action": [template.pk]},
    )
    templates.coupon_template_resume(
        template_id=template.pk, audit=staff_audit(staff, StaffAction.TEMPLATE_RESUME)
    )

    entries = LogEntry.objects.filter(object_id=str(template.pk)).order_by("pk")
    assert [(entry.user_id, audit_message(entry)) for entry in entries] == [
        (staff.pk, "Paused: nothing is issued until resumed."),
        (staff.pk, "Resumed issuing."),
        (staff.pk, "Paused: nothing is issued until resumed."),
        (staff.pk, "Resumed issuing."),
    ]
    # A pause that changed nothing records nothing; the system (no actor) is not staff.
    templates.coupon_template_resume(
        template_id=template.pk, audit=staff_audit(staff, StaffAction.TEMPLATE_RESUME)
    )
    templates.coupon_template_pause(template_id=template.pk)
    assert entries.count() == 4


def test_an_edit_records_each_term_from_and_to_in_the_history(admin_site, staff):
    template = CouponTemplateFactory(name="Spring", total=100)

    bearer_client(staff).patch(
        f"/api/admin/coupons/{template.pk}", {"total": 999_999}, format="json"
    )
    entry = LogEntry.objects.get(object_id=str(template.pk))
    message = audit_message(entry)
    page = admin_site.get(
        f"/admin/coupons/coupontemplate/{template.pk}/history/", **ZH
    ).content.decode()

    assert message == "Changed issue total from 100 to 999999."
    assert "修改了 发放总量：从 100 改为 999999。" in page
    assert staff.username in page


def test_a_stock_adjustment_is_recorded_with_its_amounts_once(admin_site, staff):
    product = ProductFactory(name="Tea", stock=10)

    response = admin_site.post(
        f"/admin/orders/product/{product.pk}/change/",
        {"name": "Tea", "category": "", "price": "99.00", "stock_change": "-4"},
    )
    entry = LogEntry.objects.get(object_id=str(product.pk))  # once: not Django's own too
    message = audit_message(entry)
    page = admin_site.get(f"/admin/orders/product/{product.pk}/history/", **ZH).content.decode()

    assert response.status_code == 302
    assert Product.objects.get(pk=product.pk).stock == 6
    assert message == "Stock adjusted by -4, to 6."
    assert "库存调整 -4，调整后为 6。" in page


def test_a_staff_cancel_and_a_code_run_are_recorded(staff):
    things = world()

    services.order_cancel(
        user_id=things.shopper.pk,
        order_id=things.order.pk,
        audit=staff_audit(staff, StaffAction.ORDER_CANCEL),
    )
    bearer_client(staff).post(
        f"/api/admin/coupons/{things.template.pk}/codes", {"count": 7}, format="json"
    )

    cancel = LogEntry.objects.get(object_id=str(things.order.pk))
    codes = LogEntry.objects.get(object_id=str(things.template.pk))
    assert audit_message(cancel) == (
        "Cancelled by staff (¥99.00 to pay): stock returned, no coupon to return."
    )
    assert audit_message(codes) == "Created 7 single-use codes."


def test_the_grant_command_acts_as_a_staff_member_with_the_permission(tmp_path, staff):
    template = CouponTemplateFactory(total=10)
    shopper = UserFactory(username="carol")
    users_file = tmp_path / "users.txt"
    users_file.write_text("carol\n")
    viewer = acting_staff(*VIEW_ONLY)
    before = state()

    def grant(*acting: str) -> str:
        out = StringIO()
        args = [str(template.pk), "--users-file", str(users_file), "--reason", "Outage"]
        call_command("grant_coupons", *args, *acting, stdout=out)
        return out.getvalue()

    with pytest.raises(CommandError, match="does not have the permission"):
        grant("--as", viewer.username)
    with pytest.raises(CommandError, match="No staff user"):
        grant("--as", shopper.username)
    with pytest.raises(CommandError, match="--as"):
        grant()
    assert state() == before

    grant("--as", staff.username)

    assert UserCoupon.objects.get().granted_by_id == staff.pk
    entry = LogEntry.objects.get()
    assert (entry.user_id, audit_message(entry)) == (
        staff.pk,
        "Granted to 1 users, reason “Outage”: granted: 1.",
    )


def test_a_service_refuses_an_actor_without_the_permission_and_changes_nothing():
    viewer = acting_staff(*VIEW_ONLY)
    template = CouponTemplateFactory(total=10)
    product = ProductFactory(stock=10)
    before = state()

    for attempt in (
        lambda: templates.coupon_template_edit(
            template_id=template.pk,
            changes={"total": 999},
            audit=staff_audit(viewer, StaffAction.TEMPLATE_EDIT),
        ),
        lambda: templates.coupon_template_pause(
            template_id=template.pk, audit=staff_audit(viewer, StaffAction.TEMPLATE_PAUSE)
        ),
        lambda: templates.coupon_template_delete(
            template_id=template.pk, audit=staff_audit(viewer, StaffAction.TEMPLATE_DELETE)
        ),
        lambda: stock.product_stock_adjust(
            product_id=product.pk, change=5, audit=staff_audit(viewer, StaffAction.STOCK_ADJUST)
        ),
    ):
        with pytest.raises(Exception) as refused:
            attempt()
        assert getattr(refused.value, "code", None) == "permission_denied"
    assert state() == before


def test_the_log_page_searches_and_filters_every_staff_action_in_chinese(admin_site, staff):
    alice = acting_staff("coupons.pause_coupons", username="alice")
    template = CouponTemplateFactory(name="Summer")
    product = ProductFactory(name="Kettle", stock=10)
    templates.coupon_template_pause(
        template_id=template.pk, audit=staff_audit(alice, StaffAction.TEMPLATE_PAUSE)
    )
    stock.product_stock_adjust(
        product_id=product.pk, change=5, audit=staff_audit(staff, StaffAction.STOCK_ADJUST)
    )
    long_ago = clock.now() - timedelta(days=40)
    LogEntry.objects.filter(user=staff).update(action_time=long_ago)

    page = admin_site.get(LOG_PAGE, **ZH).content.decode()
    by_user = admin_site.get(LOG_PAGE, {"q": "alice"}, **ZH).content.decode()
    by_object = admin_site.get(LOG_PAGE, {"q": "Kettle"}, **ZH).content.decode()
    by_action_name = admin_site.get(LOG_PAGE, {"q": "调整库存"}, **ZH).content.decode()
    by_filter = admin_site.get(LOG_PAGE, {"staff_action": "template_pause"}, **ZH)
    # The date filter's "past 7 days", as its link sends it.
    midnight = timezone.localtime().replace(hour=0, minute=0, second=0, microsecond=0)
    since = (midnight - timedelta(days=7)).isoformat(sep=" ")
    by_date = admin_site.get(LOG_PAGE, {"action_time__gte": since}, **ZH).content.decode()

    assert "已暂停：恢复前不再发放。" in page and "库存调整 +5，调整后为 15。" in page
    assert "Summer" in by_user and "Kettle" not in by_user
    assert "Kettle" in by_object and "Summer" not in by_object
    assert "Kettle" in by_action_name and "Summer" not in by_action_name
    assert "Summer" in by_filter.content.decode() and "Kettle" not in by_filter.content.decode()
    assert "Summer" in by_date and "Kettle" not in by_date
    # simpleui draws the filters from attributes: each one's title and its choices.
    toolbar = page[page.index('id="toolbar"') : page.index('id="changelist-form"')]
    shown = texts_of(page, "result_list") + re.findall(
        r'\s(?:label|placeholder)="([^"]+)"', toolbar
    )
    assert "已暂停" in " ".join(shown) and "操作" in " ".join(shown)
    # The names the test gave (the staff fixture's username is "user" and a number).
    allowed = {"alice", "user", "Summer", "Kettle"}
    assert english_words(shown, allowed=allowed) == []


def test_the_log_page_is_read_only(admin_site):
    template = CouponTemplateFactory()
    admin_site.post(
        "/admin/coupons/coupontemplate/",
        {"action": "pause_templates", "_selected_action": [template.pk]},
    )
    entry = LogEntry.objects.get()

    assert admin_site.get(f"{LOG_PAGE}add/").status_code == 403
    assert admin_site.post(f"{LOG_PAGE}{entry.pk}/delete/", {"post": "yes"}).status_code == 403
    assert admin_site.post(f"{LOG_PAGE}{entry.pk}/change/", {}).status_code == 403
    assert LogEntry.objects.count() == 1
    assert CouponTemplate.objects.get().paused_at is not None
    assert recorded(StaffAction.TEMPLATE_PAUSE, entry.user) == 1


def test_a_replayed_api_grant_is_recorded_once(staff):
    template = CouponTemplateFactory(total=10)
    shopper = UserFactory()

    def send():
        return bearer_client(staff).post(
            f"/api/admin/coupons/{template.pk}/grants",
            {"user_ids": [shopper.pk], "reason": "retry"},
            format="json",
            HTTP_IDEMPOTENCY_KEY="grant-once",
        )

    first, replay = send(), send()

    assert (first.status_code, replay.headers["Idempotent-Replayed"]) == (200, "true")
    assert recorded(StaffAction.COUPONS_GRANT, staff) == 1


@pytest.mark.django_db
def test_a_publish_records_every_term_in_the_forms_words(staff):
    """Issue: a publish recorded only the total and the limit, as 总额; now every term, as the
    form names it, money in yuan, choices by their labels."""
    now = clock.now()
    tea = Category.objects.create(name="茶具")
    template = templates.coupon_template_publish(
        name="满百减十",
        type="threshold",
        value=1000,
        min_amount=10000,
        total=500,
        per_user_limit=2,
        valid_from=now,
        valid_until=now + timedelta(days=7),
        scope="categories",
        scope_ids=[tea.pk],
        audience="new_customers",
        audit=staff_audit(staff, StaffAction.TEMPLATE_PUBLISH),
    )
    entry = LogEntry.objects.get(object_id=str(template.pk))

    with translation.override("zh-hans"):
        said = audit_message(entry)

    for words in ("面额：¥10.00", "最低订单金额：¥100.00", "发放总量：500", "每人限领：2"):
        assert words in said, said
    # The ids the terms list by name, as the form shows them (it said "适用类目或商品：1").
    assert "：茶具" in said and f"：{tea.pk};" not in said
    assert "总额" not in said
    assert str(CouponTemplate.Audience.NEW_CUSTOMERS.label) not in said  # the English label
    with translation.override("zh-hans"):
        assert str(CouponTemplate.Audience.NEW_CUSTOMERS.label) in audit_message(entry)


def test_an_edit_names_the_categories_and_products_it_excludes_and_one_unit_in_words(staff):
    kitchen = Category.objects.create(name="厨具")
    wok = Product.objects.create(name="铁锅", price=100, stock=1, category=kitchen)
    template = CouponTemplateFactory()
    changes = {"excluded_category_ids": [kitchen.pk], "excluded_product_ids": [wok.pk]}
    templates.coupon_template_edit(
        template_id=template.pk,
        changes={**changes, "one_unit_only": True},
        audit=staff_audit(staff, StaffAction.TEMPLATE_EDIT),
    )
    entry = LogEntry.objects.get(object_id=str(template.pk))

    with translation.override("zh-hans"):
        said = audit_message(entry)

    assert "排除的类目：从 – 改为 厨具" in said, said
    assert "排除的商品：从 – 改为 铁锅" in said
    assert "仅限一件：从 否 改为 是" in said


@pytest.mark.django_db
def test_djangos_own_change_message_names_user_fields_in_chinese(staff):
    """Issue: "已修改Staff status 和 User permissions": the labels Django stores matched no
    msgid of its catalogue."""
    user = UserFactory()
    entry = LogEntry.objects.log_actions(
        user_id=staff.pk,
        queryset=[user],
        action_flag=2,
        change_message='[{"changed": {"fields": ["Staff status", "User permissions"]}}]',
        single_object=True,
    )

    with translation.override("zh-hans"):
        said = entry.get_change_message()

    assert "职员状态" in said and "用户权限" in said, said
