"""Campaigns (活动) with a money budget (SPEC section 27): the model, the budget's take and give
back in the order's transaction, the staff services, the admin and the admin API."""
