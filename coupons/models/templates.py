"""The coupon template: its terms, their bounds and checks, and a claimed coupon's use window."""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import models
from django.db.models import F, Func, IntegerField, Q
from django.db.models.functions import Length, Trim, Upper
from django.db.models.lookups import Exact, GreaterThan, GreaterThanOrEqual, LessThanOrEqual
from django.utils.translation import gettext_lazy as _

from core.limits import MAX_INT_UNSIGNED
from core.money import MAX_AMOUNT_CENTS
from coupons.fields import IncarnationField, MillisecondDateTimeField

# Column bounds: amounts as core.money allows (far inside BIGINT), counts as INT UNSIGNED.
MAX_AMOUNT = MAX_AMOUNT_CENTS
MAX_COUNT = MAX_INT_UNSIGNED
NAME_MAX_LENGTH = 64
MAX_PERCENT = 99
MAX_VALID_DAYS = 3650
MAX_SCOPE_IDS = 500
CODE_PATTERN = r"^[A-Za-z0-9_-]{4,32}$"
CODE_MAX_LENGTH = 32


class JSONArrayLength(Func):
    """JSON_LENGTH on MySQL/MariaDB, json_array_length on SQLite (the `make run` database)."""

    function = "JSON_LENGTH"
    output_field = IntegerField()

    def as_sqlite(self, compiler, connection, **extra_context):
        return super().as_sql(compiler, connection, function="JSON_ARRAY_LENGTH", **extra_context)


class CouponTemplate(models.Model):
    class Type(models.TextChoices):
        DIRECT = "direct", _("Direct (flat amount off)")
        THRESHOLD = "threshold", _("Threshold (spend X, get Y off)")
        PERCENT = "percent", _("Percent off (optional cap and threshold)")

    class Scope(models.TextChoices):
        ALL = "all", _("The whole store")
        CATEGORIES = "categories", _("Products of some categories")
        PRODUCTS = "products", _("Some products")

    class Visibility(models.TextChoices):
        PUBLIC = "public", _("Public (listed, claimable by id or code)")
        HIDDEN = "hidden", _("Hidden (only by code or grant)")

    class Audience(models.TextChoices):
        ALL = "all", _("Everyone")
        NEW_CUSTOMERS = "new_customers", _("New customers only (no paid order yet)")

    class AutoIssue(models.TextChoices):
        """Issued by an event too (自动发券, SPEC section 28), besides any way in it has."""

        NONE = "none", _("Not by an event")
        SIGNUP = "signup", _("On sign-up (注册赠券)")
        PAID_ORDER = "paid_order", _("After a paid order (购物赠券)")

    name = models.CharField(max_length=NAME_MAX_LENGTH, verbose_name=_("name"))
    type = models.CharField(max_length=16, choices=Type.choices, verbose_name=_("type"))
    value = models.PositiveBigIntegerField(
        help_text=_("Face value in cents; for a percent coupon, the percent off (1..99)."),
        verbose_name=_("value"),
    )
    min_amount = models.PositiveBigIntegerField(
        default=0,
        help_text=_("Threshold in cents, on the eligible subtotal."),
        verbose_name=_("minimum order"),  # as the form says it, and so the audit
    )
    max_discount = models.PositiveBigIntegerField(
        null=True,
        blank=True,
        help_text=_("Cap on a percent coupon's discount, in cents."),
        verbose_name=_("max discount"),
    )
    total = models.PositiveIntegerField(
        help_text=_("How many may be issued."), verbose_name=_("issue total")
    )
    per_user_limit = models.PositiveIntegerField(default=1, verbose_name=_("per user limit"))
    valid_from = MillisecondDateTimeField(verbose_name=_("valid from"))
    valid_until = MillisecondDateTimeField(verbose_name=_("valid until"))
    valid_days = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text=_(
            "Each coupon is usable for this many days from its issue; empty: within the "
            "template's window. The window above is when coupons may be claimed."
        ),
        verbose_name=_("valid days"),
    )
    scope = models.CharField(
        max_length=16, choices=Scope.choices, default=Scope.ALL, verbose_name=_("scope")
    )
    # Plain ids of categories or products: coupons knows nothing of the catalog's models.
    scope_ids = models.JSONField(default=list, blank=True, verbose_name=_("scope ids"))
    # Left out of a store-wide or category coupon (SPEC section 25): the threshold, the
    # eligible subtotal and the split skip these products and the products of these categories.
    excluded_product_ids = models.JSONField(
        default=list, blank=True, verbose_name=_("excluded products")
    )
    excluded_category_ids = models.JSONField(
        default=list, blank=True, verbose_name=_("excluded categories")
    )
    # Applies to one unit only, the cheapest eligible one (Saleor's applyOncePerOrder).
    one_unit_only = models.BooleanField(
        default=False, db_default=False, verbose_name=_("one unit only")
    )
    auto_issue = models.CharField(
        max_length=16,
        choices=AutoIssue.choices,
        default=AutoIssue.NONE,
        db_default=AutoIssue.NONE,
        verbose_name=_("issued automatically"),
    )
    # For AutoIssue.PAID_ORDER: the least pay_amount that earns it (满额返券); 0 for any order.
    auto_issue_min_pay = models.PositiveBigIntegerField(
        default=0, db_default=0, verbose_name=_("minimum paid amount")
    )
    # The campaign whose budget its coupons' discounts draw on (SPEC section 27), if any; set
    # by the campaign's services, not a term: it can change after claims.
    campaign = models.ForeignKey(
        "coupons.Campaign",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="templates",
        verbose_name=_("campaign"),
        editable=False,
    )
    code = models.CharField(
        max_length=CODE_MAX_LENGTH, null=True, blank=True, verbose_name=_("code")
    )
    # The code in upper case, computed by the database: its unique index makes codes unique
    # without regard to case whatever the column's collation (SQLite's is case-sensitive).
    code_key = models.GeneratedField(
        expression=Upper("code"),
        output_field=models.CharField(max_length=CODE_MAX_LENGTH, null=True),
        db_persist=True,
    )
    visibility = models.CharField(
        max_length=16,
        choices=Visibility.choices,
        default=Visibility.PUBLIC,
        verbose_name=_("visibility"),
    )
    # Defaults in the database too, so rows written by raw SQL (scripts, seeds) stay valid.
    audience = models.CharField(
        max_length=16,
        choices=Audience.choices,
        default=Audience.ALL,
        db_default=Audience.ALL,
        verbose_name=_("audience"),
    )
    # Set while the template is paused (SPEC section 18): it issues nothing, by claim, code or
    # grant; coupons already held stay usable. The guarded UPDATE of a claim checks it.
    paused_at = MillisecondDateTimeField(_("paused since"), null=True, blank=True, editable=False)
    # Codes-only: issued only by one of its single-use codes or by a grant, never claimed by
    # id nor by its shared code (SPEC sections 18 and 25). Set when staff create codes and
    # choose so (coupons/services/codes.py); codes created without that choice are one more
    # way in. The name is the column's, from when codes always meant codes-only.
    has_single_use_codes = models.BooleanField(
        _("codes only"), default=False, db_default=False, editable=False
    )
    # Claims issued so far, incremented under the row lock in the claim transaction: keeps a
    # claim O(1) at any volume and is the monotonic version of the Redis total counter.
    claimed_count = models.PositiveIntegerField(
        default=0, editable=False, verbose_name=_("claimed count")
    )
    incarnation = IncarnationField()
    created_at = MillisecondDateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = MillisecondDateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        db_table = "coupon_templates"
        verbose_name = _("coupon template")
        verbose_name_plural = _("coupon templates")
        ordering = ["-id"]
        # Beyond add/change/delete/view: issuing coupons to people and reading every holder
        # out are powers of their own (SPEC section 17). Names stay English in the database;
        # the admin shows them translated (backoffice/account_admin/groups.py).
        permissions = [
            ("grant_coupons", "Can grant coupons"),
            ("export_coupons", "Can export coupons"),
            ("pause_coupons", "Can pause and resume coupons"),
            ("manage_codes", "Can create and list single-use codes"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=GreaterThan(Length(Trim("name")), 0),
                name="coupon_template_name_not_blank",
            ),
            models.CheckConstraint(
                condition=Q(type__in=["direct", "threshold", "percent"]),
                name="coupon_template_type_known",
            ),
            models.CheckConstraint(condition=Q(value__gt=0), name="coupon_template_value_positive"),
            models.CheckConstraint(
                condition=~Q(type="percent") | Q(value__lte=MAX_PERCENT),
                name="coupon_template_percent_in_range",
            ),
            models.CheckConstraint(
                condition=Q(type="direct", min_amount=0)
                | Q(type="threshold", min_amount__gte=F("value"))
                | Q(type="percent"),
                name="coupon_template_min_amount_fits_type",
            ),
            models.CheckConstraint(
                condition=Q(max_discount__isnull=True) | Q(type="percent", max_discount__gt=0),
                name="coupon_template_max_discount_percent_only",
            ),
            models.CheckConstraint(
                condition=Q(valid_days__isnull=True)
                | Q(valid_days__gte=1, valid_days__lte=MAX_VALID_DAYS),
                name="coupon_template_valid_days_in_range",
            ),
            models.CheckConstraint(
                condition=Q(Q(scope="all"), Exact(JSONArrayLength("scope_ids"), 0))
                | Q(
                    Q(scope__in=["categories", "products"]),
                    GreaterThanOrEqual(JSONArrayLength("scope_ids"), 1),
                    LessThanOrEqual(JSONArrayLength("scope_ids"), MAX_SCOPE_IDS),
                ),
                name="coupon_template_scope_ids_fit_scope",
            ),
            models.CheckConstraint(
                condition=Q(code__isnull=True) | Q(code__regex=CODE_PATTERN),
                name="coupon_template_code_format",
            ),
            models.UniqueConstraint(fields=["code_key"], name="coupon_template_code_unique"),
            models.CheckConstraint(
                condition=Q(visibility__in=["public", "hidden"]),
                name="coupon_template_visibility_known",
            ),
            models.CheckConstraint(
                condition=Q(audience__in=["all", "new_customers"]),
                name="coupon_template_audience_known",
            ),
            models.CheckConstraint(
                condition=Q(total__gte=1), name="coupon_template_total_positive"
            ),
            models.CheckConstraint(
                condition=Q(per_user_limit__gte=1), name="coupon_template_per_user_limit_positive"
            ),
            models.CheckConstraint(
                condition=Q(valid_from__lt=F("valid_until")), name="coupon_template_window_ordered"
            ),
            models.CheckConstraint(
                condition=Q(claimed_count__lte=F("total")),
                name="coupon_template_claimed_within_total",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @classmethod
    def money_terms(cls, template_type: str | None) -> frozenset[str]:
        """The terms kept in cents (the audit trail shows them in yuan): the face value too,
        unless the template is a percent one (then it is the percent off)."""
        if template_type == cls.Type.PERCENT:
            return frozenset({"min_amount", "max_discount", "auto_issue_min_pay"})
        return frozenset({"value", "min_amount", "max_discount", "auto_issue_min_pay"})

    def use_window_at(self, issued_at: datetime) -> "UseWindow":
        """The use window of a coupon of this template issued at `issued_at`: valid_days from
        the issue, or the template's own window."""
        if self.valid_days is not None:
            return UseWindow(issued_at, issued_at + timedelta(days=self.valid_days))
        return UseWindow(self.valid_from, self.valid_until)


@dataclass(frozen=True)
class UseWindow:
    valid_from: datetime
    valid_until: datetime
