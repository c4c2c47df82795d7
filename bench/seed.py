"""Data for the benchmark, written in-process through the ORM or in bulk SQL (never through
the HTTP API), and the database facts the checks read back. Import after django.setup()."""

from datetime import timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.db import connection
from rest_framework_simplejwt.tokens import AccessToken

from accounts.authentication import user_facts_load
from core import clock
from coupons.models import CouponTemplate
from coupons.shopper_list import published_terms_changed

User = get_user_model()

HOLDER_PREFIX = "holder-"
# One hash for every user: hashing 20,000 passwords would take longer than the benchmark.
_PASSWORD_HASH = make_password("bench-password-not-used-for-login")


def create_users(label: str, count: int) -> list[tuple[int, str]]:
    """Create `count` fresh users; return (user id, Bearer access token) for each."""
    users = User.objects.bulk_create(
        [User(username=f"{label}-{index}", password=_PASSWORD_HASH) for index in range(count)],
        batch_size=2000,
    )
    if any(user.pk is None for user in users):  # a backend that cannot return bulk ids
        users = list(User.objects.filter(username__startswith=f"{label}-").order_by("id"))
    user_facts_load([user.pk for user in users])  # as each one's login would
    return [(user.pk, str(AccessToken.for_user(user))) for user in users]


def create_template(
    name: str, *, total: int, claimed_count: int = 0, per_user_limit: int = 1
) -> int:
    """A direct coupon open from an hour ago for thirty days; returns its id."""
    now = clock.now()
    template = CouponTemplate.objects.create(
        name=name,
        type=CouponTemplate.Type.DIRECT,
        value=500,
        min_amount=0,
        total=total,
        per_user_limit=per_user_limit,
        valid_from=now - timedelta(hours=1),
        valid_until=now + timedelta(days=30),
        claimed_count=claimed_count,
    )
    published_terms_changed()  # as coupon_template_publish does: the shopper list is told
    return template.pk


def create_templates(prefix: str, count: int, *, total: int, per_user_limit: int) -> list[int]:
    now = clock.now()
    templates = CouponTemplate.objects.bulk_create(
        [
            CouponTemplate(
                name=f"{prefix}-{index}",
                type=CouponTemplate.Type.THRESHOLD if index % 2 else CouponTemplate.Type.DIRECT,
                value=500,
                min_amount=5000 if index % 2 else 0,
                total=total,
                per_user_limit=per_user_limit,
                valid_from=now - timedelta(hours=1),
                valid_until=now + timedelta(days=30),
            )
            for index in range(count)
        ],
        batch_size=1000,
    )
    # As the template services do: the shopper list's kept terms are told here.
    published_terms_changed()
    if any(template.pk is None for template in templates):
        return list(
            CouponTemplate.objects.filter(name__startswith=f"{prefix}-").values_list(
                "id", flat=True
            )
        )
    return [template.pk for template in templates]


def insert_holders(count: int) -> None:
    """`count` users who already hold claims, in one multi-row INSERT ... SELECT from
    MariaDB's sequence engine (seconds for a million rows)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO auth_user (password, last_login, is_superuser, username, first_name,"
            " last_name, email, is_staff, is_active, date_joined)"
            f" SELECT '!', NULL, 0, CONCAT('{HOLDER_PREFIX}', seq), '', '', '', 0, 1, NOW(6)"
            f" FROM seq_1_to_{int(count)}"
        )


def insert_existing_claims(template_id: int, count: int) -> None:
    """Give the first `count` holders one unused coupon each of the template (its window as
    their use window), in one INSERT ... SELECT, and set claimed_count to match."""
    if count <= 0:
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO user_coupons (user_id, template_id, slot, status, used_at, valid_from,"
            " valid_until, source, created_at, updated_at)"
            " SELECT u.id, t.id, 1, 'unused', NULL, t.valid_from, t.valid_until, 'claim',"
            " NOW(3), NOW(3) FROM auth_user u JOIN coupon_templates t ON t.id = %s"
            " WHERE u.username LIKE %s ORDER BY u.id LIMIT %s",
            [template_id, f"{HOLDER_PREFIX}%", count],
        )
        inserted = cursor.rowcount
    if inserted != count:
        raise RuntimeError(f"inserted {inserted} existing claims, wanted {count}")
    CouponTemplate.objects.filter(pk=template_id).update(claimed_count=count)


def give_coupons(user_id: int, template_ids: list[int], per_template: int) -> int:
    """Give one user `per_template` coupons of each template (every fourth one used), in one
    INSERT ... SELECT, and raise each template's claimed_count to match. Returns the count."""
    with connection.cursor() as cursor:
        placeholders = ", ".join(["%s"] * len(template_ids))
        cursor.execute(
            "INSERT INTO user_coupons (user_id, template_id, slot, status, used_at, valid_from,"
            " valid_until, source, created_at, updated_at)"
            " SELECT %s, t.id, s.seq, IF(s.seq %% 4 = 0, 'used', 'unused'),"
            " IF(s.seq %% 4 = 0, NOW(3), NULL), t.valid_from, t.valid_until, 'claim', NOW(3),"
            " NOW(3)"
            f" FROM coupon_templates t JOIN seq_1_to_{int(per_template)} s"
            f" WHERE t.id IN ({placeholders}) ORDER BY t.id, s.seq",
            [user_id, *template_ids],
        )
        inserted = cursor.rowcount
        cursor.execute(
            "UPDATE coupon_templates SET claimed_count = claimed_count + %s"
            f" WHERE id IN ({placeholders})",
            [per_template, *template_ids],
        )
    return inserted


def analyze_tables() -> None:
    """Refresh the optimizer's statistics after bulk loads, as a long-lived table has them."""
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE TABLE auth_user, coupon_templates, user_coupons")
        cursor.fetchall()


def claim_facts(template_id: int) -> dict[str, int]:
    """What the database holds for a template: rows, distinct claimants, claimed_count, total.
    One statement, so the four come from one snapshot even if a claim is still being served
    (a request whose client gave up)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT COUNT(*) FROM user_coupons WHERE template_id = t.id),"
            " (SELECT COUNT(DISTINCT user_id) FROM user_coupons WHERE template_id = t.id),"
            " t.claimed_count, t.total FROM coupon_templates t WHERE t.id = %s",
            [template_id],
        )
        rows, distinct_users, claimed_count, total = cursor.fetchone()
    return {
        "rows": int(rows),
        "distinct_users": int(distinct_users),
        "claimed_count": int(claimed_count),
        "total": int(total),
    }


SERVER_COUNTERS = ("Innodb_row_lock_waits", "Innodb_row_lock_time", "Innodb_data_fsyncs")


def server_counters() -> dict[str, int]:
    """MariaDB's server-wide counters of row-lock waits (and ms spent waiting) and fsyncs.
    Server-wide: other clients of the same server add to them too."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SHOW GLOBAL STATUS WHERE Variable_name IN (%s, %s, %s)", list(SERVER_COUNTERS)
        )
        return {name: int(value) for name, value in cursor.fetchall()}


def counters_delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {name: after[name] - before.get(name, 0) for name in after}


def redis_claimed_key(template_id: int) -> str:
    """The Redis key of a template's claimed counter, as the app's counter adapter names it."""
    from coupons.issuing.counter import CouponCounter
    from coupons.issuing.counter_setup import coupon_counter

    counter = coupon_counter()
    if not isinstance(counter, CouponCounter):
        raise RuntimeError("the bench needs Redis: the coupon counter is unavailable")
    incarnation = CouponTemplate.objects.values_list("incarnation", flat=True).get(pk=template_id)
    return counter.count_keys(template_id, incarnation, 0)[0]
