"""Single-use codes (SPEC section 18): the model and the codes' alphabet. Created in bulk by
coupons/services/codes.py; spent once by the issuing core's decision
(coupons/issuing/decision.py)."""

import re

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from coupons.errors import TemplateInvalid
from coupons.fields import MillisecondDateTimeField

# Single-use codes (SPEC section 18): no look-alikes (no 0/O, 1/I/L), upper case only.
SINGLE_USE_CODE_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
SINGLE_USE_CODE_LENGTH = 12  # 31**12 is about 2**59: unguessable at any throttled rate
MAX_SINGLE_USE_CODES_PER_REQUEST = 100_000
# An operator's prefix ("SPRING" -> "SPRING-7KQ2..."), so a printed batch says its campaign.
# Upper-case letters and digits of any kind: it is typed by the operator, not guessed.
SINGLE_USE_CODE_PREFIX_MAX_LENGTH = 8
SINGLE_USE_CODE_PREFIX = re.compile(rf"[A-Z0-9]{{1,{SINGLE_USE_CODE_PREFIX_MAX_LENGTH}}}")
SINGLE_USE_CODE_MAX_LENGTH = SINGLE_USE_CODE_PREFIX_MAX_LENGTH + 1 + SINGLE_USE_CODE_LENGTH
# Every code a row may hold: the generated ones and those a merchant imports (SPEC section 26):
# 8 to 21 letters A-Z, digits and inner dashes, upper case (redemption upper-cases what is
# typed). Eight characters at the least, so that an imported code is no easier to guess
# within the redemption throttle than a short coupon code.
SINGLE_USE_CODE_MIN_LENGTH = 8
ANY_SINGLE_USE_CODE = (
    rf"[A-Z0-9][A-Z0-9-]{{{SINGLE_USE_CODE_MIN_LENGTH - 2},{SINGLE_USE_CODE_MAX_LENGTH - 2}}}"
    r"[A-Z0-9]"
)


def single_use_code_prefix_validate(prefix: object) -> str:
    """The prefix in upper case, "" for none; TemplateInvalid naming `prefix` otherwise."""
    if not isinstance(prefix, str):
        raise TemplateInvalid(fields={"prefix": [gettext("A string is required.")]})
    cleaned = prefix.strip().upper()
    if cleaned and not SINGLE_USE_CODE_PREFIX.fullmatch(cleaned):
        message = gettext("Up to %(count)d letters A-Z and digits, e.g. 618.") % {
            "count": SINGLE_USE_CODE_PREFIX_MAX_LENGTH
        }
        raise TemplateInvalid(fields={"prefix": [message]})
    return cleaned


class SingleUseCode(models.Model):
    """One code that issues its template once, to whoever redeems it first (SPEC section 18).
    `used_by`/`used_at` are set by one guarded UPDATE in the issuing transaction."""

    template = models.ForeignKey(
        "coupons.CouponTemplate",
        on_delete=models.CASCADE,
        related_name="single_use_codes",
        db_index=False,
    )
    code = models.CharField(_("code"), max_length=SINGLE_USE_CODE_MAX_LENGTH, unique=True)
    used_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        db_index=False,
    )
    used_at = MillisecondDateTimeField(null=True, blank=True)
    created_at = MillisecondDateTimeField(auto_now_add=True)

    class Meta:
        db_table = "coupon_single_use_codes"
        verbose_name = _("single-use code")
        verbose_name_plural = _("single-use codes")
        indexes = [
            # The admin's list and export of a template's codes, in creation order.
            models.Index(fields=["template", "id"], name="single_use_code_template_id"),
            models.Index(fields=["used_by"], name="single_use_code_used_by"),
        ]
        constraints = [
            # A deleted user leaves the code used (used_at kept, used_by emptied).
            models.CheckConstraint(
                condition=Q(used_by__isnull=True) | Q(used_at__isnull=False),
                name="single_use_code_used_by_has_used_at",
            ),
            models.CheckConstraint(
                condition=Q(code__regex=rf"^{ANY_SINGLE_USE_CODE}$"),
                name="single_use_code_format",
            ),
        ]

    def __str__(self) -> str:
        return self.code
