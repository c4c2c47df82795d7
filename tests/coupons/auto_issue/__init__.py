"""Coupons issued by events (coupons/auto_issue/)."""
