"""A campaign's budget (SPEC section 27): the discount of a coupon used at checkout is taken
from its template's campaign in the order's transaction by one guarded UPDATE, which InnoDB
serialises on the campaign's row, so racing checkouts can never spend past the budget; it is
given back, by the same row, when the order is cancelled, expires unpaid or is refunded whole.
Lock order: the campaign's row is the last an order's transaction takes."""

from django.db.models import F, Q

from coupons.errors import BudgetExhausted
from coupons.models.campaigns import Campaign


def budget_take(*, campaign_id: int | None, amount: int) -> None:
    """Spend `amount` of the campaign's budget, or raise BudgetExhausted changing nothing. A
    template without a campaign, a campaign without a budget and a zero amount pass."""
    if campaign_id is None or amount <= 0:
        return
    taken = Campaign.objects.filter(
        Q(budget__isnull=True) | Q(budget__gte=F("spent") + amount), pk=campaign_id
    ).update(spent=F("spent") + amount)
    if not taken:
        raise BudgetExhausted()


def budget_give_back(*, campaign_id: int | None, amount: int) -> None:
    """Give `amount` back to the campaign's budget (never below nothing spent)."""
    if campaign_id is None or amount <= 0:
        return
    Campaign.objects.filter(pk=campaign_id, spent__gte=amount).update(spent=F("spent") - amount)


def budget_spent(campaign_id: int | None) -> bool:
    """Whether the campaign has a budget and nothing of it is left: its templates issue no
    more coupons. One indexed read, on claims of campaign templates only."""
    if campaign_id is None:
        return False
    return Campaign.objects.filter(
        pk=campaign_id, budget__isnull=False, spent__gte=F("budget")
    ).exists()
