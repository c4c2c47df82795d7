"""Every write to coupons, one module per idea: templates, issuing, grants and codes.
Transactions live here; views and the admin only call these. Their machinery lives beside
this package (coupons/issuing/claim_sql.py, decision.py, decision_transaction.py, terms_cache.py,
counter_sync.py, counter_reconcile.py). Import from the specific module; this package
re-exports nothing."""
