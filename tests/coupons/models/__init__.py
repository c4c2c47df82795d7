"""The tables (coupons/models/): their checks, the coupon's status and window, the data
migrations."""
