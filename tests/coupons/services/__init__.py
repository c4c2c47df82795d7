"""The staff writes (coupons/services/): templates, grants, codes, campaigns."""
