"""The throttle rates the spec sets (SPEC sections 12, 19 and 35), as the settings default."""

SPEC_DEFAULTS = {
    "login_username_ip": "10/min",
    "login_username": "100/min",
    "login_ip": "300/min",
    "refresh": "30/min",
    "claim": "60/min",
    "redeem": "10/min",
    "redeem_ip": "60/min",
    "checkout": "30/min",
    "idempotent_refusals": "20/min",
    "register_ip": "20/h",
    "register_username": "5/h",
}
