"""Every write to coupons, one module per idea: templates, issuing (with its SQL in claim_sql
and the Redis upkeep in counter_sync) and grants. Transactions live here; views and the admin
only call these. Import from the specific module; this package re-exports nothing."""
