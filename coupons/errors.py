"""Coupon domain errors. Each has a stable `code`; api/exceptions.py gives it a status."""

from django.utils.translation import gettext_lazy as _

from core.domain_errors import DomainError


class TemplateNotFound(DomainError):
    code = "not_found"
    default_detail = _("Coupon template not found.")


class CampaignNotFound(TemplateNotFound):
    default_detail = _("Campaign not found.")


class TemplateInvalid(DomainError):
    code = "invalid"
    default_detail = _("Invalid coupon template.")


class CampaignInvalid(DomainError):
    code = "invalid"
    default_detail = _("Invalid campaign.")


class CodeCountInvalid(TemplateInvalid):
    """A refused number of single-use codes: the request, not the template, is wrong."""

    default_detail = _("Invalid input.")


class CodesFileInvalid(TemplateInvalid):
    """A file of merchant codes refused as a whole: its rows' problems are named under `file`,
    and nothing of it was imported."""

    default_detail = _("The file cannot be imported; nothing was imported.")


class ClaimRejected(DomainError):
    """A claim the database refused; the subclass says why."""


class ClaimNotInWindow(ClaimRejected):
    code = "not_in_window"
    default_detail = _("This coupon cannot be claimed at this time.")


class ClaimPaused(ClaimRejected):
    code = "paused"
    default_detail = _("This coupon is paused: it is not being issued for now.")


class ClaimNotEligible(ClaimRejected):
    code = "not_eligible"
    default_detail = _("This coupon is for new customers only (no paid order yet).")


class CodeUsed(ClaimRejected):
    code = "code_used"
    default_detail = _("This code has already been used.")


class ClaimBudgetExhausted(ClaimRejected):
    code = "budget_exhausted"
    default_detail = _("This coupon's campaign has spent its budget: it is not issued any more.")


class ClaimSoldOut(ClaimRejected):
    code = "sold_out"
    default_detail = _("This coupon is sold out.")


class ClaimLimitReached(ClaimRejected):
    code = "limit_reached"
    default_detail = _("You have claimed this coupon as many times as allowed.")


class CodesCreationBusy(DomainError):
    code = "codes_busy"
    default_detail = _(
        "Single-use codes are being created for this template already; try again when done."
    )


class ClaimThrottled(DomainError):
    """The user claimed this template more often than the claim rate allows (counted in the
    claim's Redis round trip, SPEC section 15)."""

    code = "throttled"
    default_detail = _("Request was throttled.")

    def __init__(self, *, retry_after: float):
        super().__init__()
        self.retry_after = retry_after


# Errors of coupons.ports, raised to the orders app.


class BudgetExhausted(DomainError):
    """The discount would pass what is left of the coupon's campaign budget."""

    code = "budget_exhausted"
    default_detail = _("This coupon's campaign budget cannot cover its discount on this order.")


class CouponNotFound(DomainError):
    code = "not_found"
    default_detail = _("Coupon not found.")


class CouponUsed(DomainError):
    code = "coupon_used"
    default_detail = _("This coupon has already been used.")


class CouponExpired(DomainError):
    code = "coupon_expired"
    default_detail = _("This coupon is not valid at this time.")


class CouponWithdrawn(CouponExpired):
    """An event's coupon taken back (its use window ended) when the order that earned it was
    refunded: an order holding it cannot be paid; cancel it and order again."""

    default_detail = _(
        "This coupon was taken back: the order that earned it was refunded. Cancel this order"
        " and place it again without the coupon."
    )


class CouponNotEligible(DomainError):
    code = "not_eligible"
    default_detail = _(
        "This coupon is for a first paid order only, and you have paid for an order already."
    )


class CouponRollbackFailed(DomainError):
    code = "invalid_state"
    default_detail = _("The coupon could not be returned: it is not in use.")
