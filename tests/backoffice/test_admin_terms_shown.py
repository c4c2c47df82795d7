"""What the template pages show an operator (SPEC section 17): times with their seconds and
their zone, scope by name, the 折 beside a percent, the grant pages in Chinese."""

import re
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
from django.contrib.admin.models import CHANGE, LogEntry
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import translation

from backoffice.coupon_admin.forms import CouponTemplateForm
from backoffice.staff_actions import StaffAction, recorded_action
from coupons.models import CouponTemplate
from orders.models import Category, Product
from tests.support.admin_forms import form_data
from tests.support.factories import CouponTemplateFactory, UserFactory

pytestmark = pytest.mark.django_db
LIST_URL = "/admin/coupons/coupontemplate/"
ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}


def input_value(page: str, name: str) -> str:
    match = re.search(rf'name="{name}"[^>]*value="([^"]*)"', page) or re.search(
        rf'value="([^"]*)"[^>]*name="{name}"', page
    )
    assert match, name
    return match.group(1)


def frozen_page(template: CouponTemplate) -> dict[str, str]:
    """What a claimed template's change page posts, its frozen terms left out."""
    start, end = template.valid_from, template.valid_until
    return {
        "name": template.name,
        "total": "100",
        "per_user_limit": "1",
        "valid_from_0": start.strftime("%Y-%m-%d"),
        "valid_from_1": start.strftime("%H:%M:%S"),
        "valid_until_0": end.strftime("%Y-%m-%d"),
        "valid_until_1": end.strftime("%H:%M:%S"),
        "visibility": "public",
        "scope": "categories",
    }


def test_saving_a_template_unchanged_keeps_its_seconds_and_logs_no_change(
    admin_site, settings, frozen_now
):
    settings.TIME_ZONE = "Asia/Shanghai"
    shanghai = ZoneInfo("Asia/Shanghai")
    template = CouponTemplateFactory(
        valid_from=datetime(2026, 5, 1, 0, 0, 0, tzinfo=shanghai),
        valid_until=datetime(2026, 6, 30, 23, 59, 59, tzinfo=shanghai),
    )
    url = f"{LIST_URL}{template.pk}/change/"

    page = admin_site.get(url, **ZH).content.decode()
    posted = {
        field: input_value(page, field)
        for field in (
            "name",
            "value",
            "min_amount",
            "total",
            "per_user_limit",
            "valid_from_0",
            "valid_from_1",
            "valid_until_0",
            "valid_until_1",
        )
    }
    response = admin_site.post(
        url,
        posted | {"type": "direct", "scope": "all", "visibility": "public"},
        **ZH,
    )

    assert posted["valid_until_1"] == "23:59:59"
    assert "时区：Asia/Shanghai" in page and "时间均为 Asia/Shanghai 时区" in page
    assert response.status_code == 302, response.context["adminform"].form.errors
    template.refresh_from_db()
    assert template.valid_until == datetime(2026, 6, 30, 23, 59, 59, tzinfo=shanghai)
    logged = LogEntry.objects.get(object_id=str(template.pk), action_flag=CHANGE)
    assert recorded_action(logged) == (StaffAction.TEMPLATE_EDIT, {})  # no term changed


def test_scope_is_chosen_and_shown_by_name(admin_site):
    tea = Category.objects.create(name="Tea")
    kettle = Product.objects.create(name="Kettle", price=100, stock=1, category=tea)
    template = CouponTemplateFactory(scope="products", scope_ids=[kettle.pk])

    listed = admin_site.get(LIST_URL).content.decode()
    page = admin_site.get(f"{LIST_URL}{template.pk}/change/").content.decode()

    assert '<td class="field-scope_names">Some products: Kettle</td>' in listed
    assert f'<option value="{kettle.pk}" selected>Kettle</option>' in page
    assert 'class="selectfilter"' in page  # the admin's filter box to search by name
    assert "scope_ids" not in page


def test_a_claimed_template_shows_its_frozen_scope_by_name(admin_site):
    tea = Category.objects.create(name="Tea")
    template = CouponTemplateFactory(scope="categories", scope_ids=[tea.pk])
    template.claimed_count = 1
    template.save()

    page = admin_site.get(f"{LIST_URL}{template.pk}/change/", **ZH).content.decode()

    assert "指定类目的商品：Tea" in page


def test_a_percent_shows_its_zhe_in_the_form_and_on_the_frozen_page(admin_site):
    template = CouponTemplateFactory(type="percent", value=15, claimed_count=1)

    add_page = admin_site.get(f"{LIST_URL}add/", **ZH).content.decode()
    frozen = admin_site.get(f"{LIST_URL}{template.pk}/change/", **ZH).content.decode()

    assert "填 15 表示减 15%，即 85折" in add_page
    assert "减 15%（85折）" in frozen


def test_the_grant_pages_speak_chinese_and_say_it_once(admin_site):
    template = CouponTemplateFactory(name="春季")
    users = [UserFactory() for _ in range(2)]

    from_users = admin_site.post(
        "/admin/auth/user/",
        {"action": "grant_coupon_to_users", "_selected_action": [user.pk for user in users]},
        **ZH,
    ).content.decode()
    from_template = admin_site.get(f"{LIST_URL}{template.pk}/grant/", **ZH).content.decode()

    assert from_users.count("优惠券将按与领取相同的规则") == 1
    assert "每行一个用户名或用户 ID" in from_template
    assert "发放 <strong>春季</strong>" in from_template
    assert 'value="发放"' in from_template


def test_scope_names_cost_the_same_queries_for_one_row_and_many(admin_site):
    tea = Category.objects.create(name="Tea")
    kettle = Product.objects.create(name="Kettle", price=100, stock=1, category=tea)

    def list_queries() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert admin_site.get(LIST_URL).status_code == 200
        return len(queries)

    CouponTemplateFactory(scope=CouponTemplate.Scope.CATEGORIES, scope_ids=[tea.pk])
    CouponTemplateFactory(scope=CouponTemplate.Scope.PRODUCTS, scope_ids=[kettle.pk])
    few = list_queries()
    for _ in range(5):
        CouponTemplateFactory(scope=CouponTemplate.Scope.CATEGORIES, scope_ids=[tea.pk])
        CouponTemplateFactory(scope=CouponTemplate.Scope.PRODUCTS, scope_ids=[kettle.pk])

    assert list_queries() == few


def test_scope_picks_posted_after_a_claim_froze_them_are_refused_not_dropped(admin_site):
    tea, coffee = Category.objects.create(name="Tea"), Category.objects.create(name="Coffee")
    template = CouponTemplateFactory(scope="categories", scope_ids=[tea.pk], claimed_count=1)
    url = f"{LIST_URL}{template.pk}/change/"
    page = frozen_page(template)

    same = admin_site.post(url, page | {"scope_categories": [tea.pk]})
    changed = admin_site.post(url, page | {"scope_categories": [tea.pk, coffee.pk]})

    assert same.status_code == 302
    assert changed.status_code == 200
    assert "can no longer change" in str(changed.context["adminform"].form.non_field_errors())
    template.refresh_from_db()
    assert template.scope_ids == [tea.pk]


def test_a_frozen_scope_pick_of_thousands_of_digits_is_refused_not_a_500(admin_site):
    tea = Category.objects.create(name="Tea")
    template = CouponTemplateFactory(scope="categories", scope_ids=[tea.pk], claimed_count=1)
    page = frozen_page(template) | {"scope_categories": ["9" * 5000]}  # int() takes 4300

    response = admin_site.post(f"{LIST_URL}{template.pk}/change/", page)

    assert response.status_code == 200
    assert "can no longer change" in str(response.context["adminform"].form.non_field_errors())
    template.refresh_from_db()
    assert template.scope_ids == [tea.pk]


def test_85_typed_for_85zhe_is_refused_until_confirmed(admin_site):
    from tests.support.admin_forms import form_data

    percent = {"type": "percent", "min_amount": "", "name": "八五折"}
    mistaken = admin_site.post(f"{LIST_URL}add/", form_data(value="85", **percent), **ZH)
    meant = admin_site.post(
        f"{LIST_URL}add/", form_data(value="85", confirm_deep_discount="on", **percent)
    )
    usual = admin_site.post(f"{LIST_URL}add/", form_data(value="15", **percent))

    assert mistaken.status_code == 200
    assert mistaken.context["adminform"].form.errors["value"] == [
        "减 85% 即 15折，价格减去一半以上。要打 85折请填 15；确要减 85%，请勾选“确认减去一半以上”。"
    ]
    assert (meant.status_code, usual.status_code) == (302, 302)
    assert sorted(CouponTemplate.objects.values_list("value", flat=True)) == [15, 85]
    # 90 typed for 9折: the hint names 9折, not "90折" (issue 42, item 10)
    ninety = admin_site.post(f"{LIST_URL}add/", form_data(value="90", **percent), **ZH)
    assert ninety.context["adminform"].form.errors["value"] == [
        "减 90% 即 1折，价格减去一半以上。要打 9折请填 10；确要减 90%，请勾选“确认减去一半以上”。"
    ]


def test_the_scope_of_a_template_nobody_claimed_can_be_changed(admin_site):
    """Issue 21: the scope picks of an unclaimed template were refused as if "a coupon was
    claimed while you were editing"."""
    tea, coffee = Category.objects.create(name="Tea"), Category.objects.create(name="Coffee")
    kettle = Product.objects.create(name="Kettle", price=100, stock=1, category=tea)
    template = CouponTemplateFactory(scope="categories", scope_ids=[tea.pk])
    url = f"{LIST_URL}{template.pk}/change/"
    page = form_data(name=template.name, scope="categories")

    more = admin_site.post(url, page | {"scope_categories": [tea.pk, coffee.pk]})
    template.refresh_from_db()
    picks = template.scope_ids
    products = admin_site.post(url, page | {"scope": "products", "scope_products": [kettle.pk]})
    template.refresh_from_db()

    assert (more.status_code, products.status_code) == (302, 302)
    assert picks == sorted([tea.pk, coffee.pk])
    assert (template.scope, template.scope_ids) == ("products", [kettle.pk])


def test_a_scope_frozen_meanwhile_is_named_in_the_admins_language(admin_site):
    tea, coffee = Category.objects.create(name="Tea"), Category.objects.create(name="Coffee")
    template = CouponTemplateFactory(scope="categories", scope_ids=[tea.pk], claimed_count=1)
    page = frozen_page(template) | {"scope_categories": [tea.pk, coffee.pk]}

    response = admin_site.post(
        f"{LIST_URL}{template.pk}/change/", page, HTTP_ACCEPT_LANGUAGE="zh-hans"
    )

    [error] = response.context["adminform"].form.non_field_errors()
    with translation.override("zh-hans"):
        label = str(CouponTemplateForm.base_fields["scope_categories"].label)
    assert label != "categories in scope" and f"“{label}”" in error
    assert "scope" not in error


def field_labels(page: str) -> list[str]:
    """The labels of the page's form rows, as an operator reads them (tags and colons off)."""
    labels = re.findall(r"<label[^>]*>(.*?)</label>", page, flags=re.S)
    return [re.sub(r"<[^>]+>", "", label).strip().rstrip(":：") for label in labels]


def test_the_issue_total_is_a_count_and_the_scope_is_shown_once(admin_site):
    tea = Category.objects.create(name="茶叶")
    template = CouponTemplateFactory(scope="categories", scope_ids=[tea.pk])
    add_page = admin_site.get(f"{LIST_URL}add/", **ZH).content.decode()
    CouponTemplate.objects.filter(pk=template.pk).update(claimed_count=1)  # frozen

    frozen = admin_site.get(f"{LIST_URL}{template.pk}/change/", **ZH).content.decode()
    listed = admin_site.get(LIST_URL, **ZH).content.decode()

    assert "发放总量" in field_labels(add_page) and "总额" not in field_labels(add_page)
    assert field_labels(frozen).count("适用范围") == 1
    assert "指定类目的商品：茶叶" in frozen
    assert "已领取 / 发放总量" in listed


def test_exclusions_and_one_unit_are_shown_by_name_on_the_list_the_frozen_page_and_the_export(
    admin_site,
):
    """Issue 42: the list said 全店通用 for a coupon excluding 厨具, the claimed page showed
    "排除的分类: [1]" and the export left both out."""
    from tests.support.staff_jobs import finished_job, job_file

    kitchen = Category.objects.create(name="厨具")
    wok = Product.objects.create(name="铁锅", price=100, stock=1, category=kitchen)
    template = CouponTemplateFactory(
        name="九折",
        excluded_category_ids=[kitchen.pk],
        excluded_product_ids=[wok.pk],
        one_unit_only=True,
        claimed_count=1,
    )
    shown = "全店通用，不含类目：厨具；商品：铁锅；仅限一件"

    listed = admin_site.get(LIST_URL, **ZH).content.decode()
    frozen = admin_site.get(f"{LIST_URL}{template.pk}/change/", **ZH).content.decode()
    export = finished_job(
        admin_site.post(
            LIST_URL,
            {"action": "export_templates_csv", "_selected_action": [template.pk]},
            **ZH,
        )
    )

    assert f'<td class="field-scope_names">{shown}</td>' in listed
    assert shown in frozen and "[1" not in frozen and "排除的类目和商品、仅限一件" in frozen
    assert shown in job_file(admin_site, export).decode("utf-8-sig")


@pytest.mark.parametrize(
    ("fields", "shown"),
    [
        ({"auto_issue": "signup", "visibility": "hidden"}, "注册赠券"),
        ({"auto_issue": "paid_order", "auto_issue_min_pay": 20000}, "满额返券（实付满 ¥200.00）"),
        ({"auto_issue": "paid_order"}, "购物赠券"),
        ({"visibility": "hidden"}, "兑换码或定向发放"),
        ({"audience": "new_customers"}, "商城；仅限新客"),
    ],
)
def test_the_list_says_how_each_template_is_issued_and_for_whom(admin_site, fields, shown):
    CouponTemplateFactory(**fields)

    listed = admin_site.get(LIST_URL, **ZH).content.decode()

    assert f'<td class="field-issued_by">{shown}</td>' in listed


def test_a_template_s_campaign_is_on_the_list_its_filter_its_page_and_the_admin_api(
    admin_site, staff_client
):
    from tests.coupons.services.test_campaigns import a_campaign

    sale = CouponTemplateFactory(name="双十二满减")
    CouponTemplateFactory(name="平日券")
    campaign = a_campaign(50_000, sale)

    listed = admin_site.get(LIST_URL, **ZH).content.decode()
    filtered = admin_site.get(f"{LIST_URL}?campaign__id__exact={campaign.pk}")
    page = admin_site.get(f"{LIST_URL}{sale.pk}/change/").content.decode()
    by_api = staff_client.get(f"/api/admin/coupons/{sale.pk}").json()

    assert f'<td class="field-campaign_name">{campaign.name}</td>' in listed
    assert [t.name for t in filtered.context["cl"].result_list] == ["双十二满减"]
    assert f"/admin/coupons/campaign/{campaign.pk}/change/" in page
    assert by_api["campaign"] == {"id": campaign.pk, "name": campaign.name}
