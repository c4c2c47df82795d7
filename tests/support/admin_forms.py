"""Form data the Django admin's coupon template form accepts."""

from datetime import timedelta

from core import clock


def form_data(**overrides):
    start = clock.now()
    end = start + timedelta(days=3)
    data = {
        "name": "Admin coupon",
        "type": "threshold",
        "value": "10.00",
        "min_amount": "50.00",
        "total": "10",
        "per_user_limit": "1",
        "valid_from_0": start.strftime("%Y-%m-%d"),
        "valid_from_1": start.strftime("%H:%M:%S"),
        "valid_until_0": end.strftime("%Y-%m-%d"),
        "valid_until_1": end.strftime("%H:%M:%S"),
        "scope": "all",
        "visibility": "public",
        "audience": "all",
    }
    return data | overrides
