"""Read routing (core/read_routing.py, decision 0801): with a replica configured, the admin's
template report, its CSV exports and the shopper list's terms read go to the alias
`replica`; claims, orders, "my coupons" and authentication never do, and no write does. In
the suite the replica is a second connection to the test database (config/settings/test.py),
so each statement's alias is what is checked here."""

import pytest
from django.db import connections
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from config.settings.base import replica_database
from core.read_routing import REPLICA, ReplicaRouter, reads_alias, replica_reads
from coupons.models import CouponTemplate, UserCoupon
from coupons.models.single_use_codes import SingleUseCode
from coupons.services import codes, templates
from tests.support.clients import bearer_client
from tests.support.factories import (
    CouponTemplateFactory,
    ProductFactory,
    UserCouponFactory,
    UserFactory,
)
from tests.support.helpers import claim_url
from tests.support.staff_jobs import finished_job, job_file, records_csv

ALIASES = ["default", "decision", REPLICA]
pytestmark = pytest.mark.django_db(transaction=True, databases=ALIASES)
PASSWORD = "a-long-enough-password-1"


@pytest.fixture
def routed(settings):
    """The routing as with DATABASE_REPLICA_URL set."""
    settings.DATABASE_REPLICA_READS = True


class Statements:
    """The SQL each alias ran inside the block."""

    def __enter__(self):
        self.captured = {alias: CaptureQueriesContext(connections[alias]) for alias in ALIASES}
        for capture in self.captured.values():
            capture.__enter__()
        return self

    def __exit__(self, *exc):
        for capture in self.captured.values():
            capture.__exit__(*exc)

    def on(self, alias: str) -> list[str]:
        return [query["sql"] for query in self.captured[alias].captured_queries]


def reading(statements: list[str], table: str) -> list[str]:
    """The SELECTs that read `table`'s rows (its columns first, as Django writes them)."""
    return [sql for sql in statements if sql.lstrip().startswith(f"SELECT `{table}`.")]


def test_the_shopper_list_reads_its_terms_on_the_replica_and_its_counts_on_the_writer(routed):
    template = CouponTemplateFactory()
    user = UserFactory()
    client = bearer_client(user)
    client.post(claim_url(template))
    templates.coupon_template_edit(template_id=template.pk, changes={"name": "edited"})

    with Statements() as first:  # the terms changed: read again, on the replica
        listed = client.get("/api/coupons").json()["results"]
    with Statements() as second:  # the kept terms: one statement, on the writer
        again = client.get("/api/coupons").json()["results"]

    assert listed[0]["name"] == "edited" and listed[0]["claimed_by_me"] == 1
    assert again == listed
    assert len(reading(first.on(REPLICA), CouponTemplate._meta.db_table)) == 1
    assert not reading(first.on("default"), CouponTemplate._meta.db_table)
    assert second.on(REPLICA) == []
    # The per-request statement (version, claimed_count, the caller's own count) stays on
    # the writer, and is the only one: the caller is known from the user's facts in Redis
    # (decision 0720), so no user lookup joins it.
    assert len(second.on("default")) == 1


def test_the_report_and_both_exports_read_on_the_replica(routed, admin_site):
    template = CouponTemplateFactory(name="report")
    UserCouponFactory(template=template)
    codes_template = CouponTemplateFactory()
    codes.single_use_codes_create(template_id=codes_template.pk, count=2)

    with Statements() as report:
        page = admin_site.get(f"/admin/coupons/coupontemplate/{template.pk}/change/")
        assert page.status_code == 200
    with Statements() as export:  # the job run where a worker would run it
        coupons_csv = records_csv(admin_site, template.pk).decode()
    with Statements() as codes_export:
        response = admin_site.post(
            "/admin/coupons/coupontemplate/",
            {"action": "export_single_use_codes", "_selected_action": [codes_template.pk]},
        )
        codes_csv = job_file(admin_site, finished_job(response)).decode()

    coupons_table = UserCoupon._meta.db_table
    # The recent claims (the funnel and the chart count in aggregates, also there); the
    # page's own object (the admin's get_object) stays on the writer, as every form does.
    assert reading(report.on(REPLICA), coupons_table)
    assert not reading(report.on("default"), coupons_table)
    assert len(report.on(REPLICA)) >= 4
    assert len(coupons_csv.splitlines()) == 2
    assert reading(export.on(REPLICA), coupons_table)
    assert not reading(export.on("default"), coupons_table)
    assert len(codes_csv.splitlines()) == 3
    codes_table = SingleUseCode._meta.db_table
    assert reading(codes_export.on(REPLICA), codes_table)
    assert not reading(codes_export.on("default"), codes_table)
    for statements in (report, export, codes_export):  # the audit records go to the writer
        assert not [sql for sql in statements.on(REPLICA) if not sql.lstrip().startswith("SELECT")]


def test_claims_orders_my_coupons_and_authentication_never_use_the_replica(routed):
    user = UserFactory()
    user.set_password(PASSWORD)
    user.save()
    template = CouponTemplateFactory(value=500)
    product = ProductFactory(price=10000, stock=5)

    client = APIClient()
    with Statements() as statements:
        tokens = client.post(
            "/api/auth/token", {"username": user.username, "password": PASSWORD}, format="json"
        ).json()
        refreshed = client.post(
            "/api/auth/token/refresh", {"refresh": tokens["refresh"]}, format="json"
        )
        assert refreshed.status_code == 200
        shopper = bearer_client(user)
        assert shopper.post(claim_url(template)).status_code == 201
        mine = shopper.get("/api/coupons/mine").json()["results"]
        assert shopper.get("/api/auth/me").status_code == 200
        order = shopper.post(
            "/api/orders",
            {"items": [{"product_id": product.pk, "quantity": 1}], "coupon_id": mine[0]["id"]},
            format="json",
        )
        assert order.status_code == 201, order.json()
        pay_url = f"/api/orders/{order.json()['id']}/pay"
        paid = shopper.post(pay_url, {"amount": 9500}, format="json")
        assert paid.status_code == 200, paid.json()
        assert shopper.get("/api/orders").json()["count"] == 1

    assert statements.on(REPLICA) == []
    assert statements.on("default")  # they did read and write, on the writer


def test_without_a_replica_every_read_stays_on_the_default_database(settings):
    settings.DATABASE_REPLICA_READS = False
    with replica_reads():
        assert reads_alias() == "default"
        with Statements() as statements:
            assert CouponTemplate.objects.count() == 0
    assert statements.on(REPLICA) == []


def test_a_row_read_on_the_replica_is_saved_on_the_writer(routed):
    CouponTemplateFactory(name="before")
    with replica_reads():
        template = CouponTemplate.objects.get()
    assert template._state.db == REPLICA
    assert reads_alias() == "default"  # the mark ends with its block

    assert ReplicaRouter().db_for_write(CouponTemplate, instance=template) == "default"
    assert ReplicaRouter().allow_migrate(REPLICA, "coupons") is False


def test_the_replica_is_another_server_whose_sessions_wait_for_the_cluster(settings):
    default = settings.DATABASES["default"]
    replica = replica_database(default, "mysql://reader:secret@10.0.0.9:13301/coupons")

    assert (replica["HOST"], replica["PORT"], replica["USER"], replica["NAME"]) == (
        "10.0.0.9",
        13301,
        "reader",
        "coupons",
    )
    assert replica["OPTIONS"]["init_command"].endswith(", wsrep_sync_wait=1")
    assert replica["OPTIONS"]["read_timeout"] == default["OPTIONS"]["read_timeout"]
    assert replica["TEST"]["MIRROR"] == "default"
    with connections[REPLICA].cursor() as cursor:  # the suite's replica connection, for real
        cursor.execute("SELECT @@SESSION.wsrep_sync_wait, @@SESSION.innodb_lock_wait_timeout")
        assert cursor.fetchone() == (1, settings.DATABASE_LOCK_WAIT_TIMEOUT)
