"""A campaign for the tests: made through the staff service, as the admin makes one."""

from datetime import timedelta

from core import clock
from coupons.models import Campaign
from coupons.services.campaigns import campaign_create


def a_campaign(budget: int | None, *templates) -> Campaign:
    now = clock.now()
    return campaign_create(
        name="双十一",
        starts_at=now - timedelta(days=1),
        ends_at=now + timedelta(days=10),
        budget=budget,
        template_ids=[template.pk for template in templates],
    )
