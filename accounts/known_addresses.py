"""The addresses an account has logged in from (SPEC section 20, decision 0632): a login from
one of them is counted only in its own (account, address) bucket, past the per-account and
per-address ceilings, so guesses from many addresses, or from a shared one, do not lock the
owner out where the owner logged in before.

One sorted set per account in the cache's Redis (address -> when it last logged in), at most
LOGIN_KNOWN_ADDRESSES_MAX members (the most recent), kept LOGIN_KNOWN_ADDRESS_DAYS after the
last login. Redis away: no address is known, so every login meets the ceilings (counted in
this process, api/throttles.py); a guesser gains nothing from an outage."""

import redis
from django.conf import settings
from django.core.cache import caches
from django_redis import get_redis_connection

from api.throttles import backoff
from core import clock


def known_key(account: str) -> str:
    return caches["default"].make_key(f"login-known:{account}")


def address_known(account: str, ip: str) -> bool:
    """Did this account log in from this address within LOGIN_KNOWN_ADDRESS_DAYS?"""
    if backoff.skipping():
        return False
    try:
        return get_redis_connection("default").zscore(known_key(account), ip) is not None
    except redis.RedisError as error:
        backoff.failed(error)
        return False


def address_remember(account: str, ip: str) -> None:
    """After a successful login: this address is the owner's (best effort, one round trip)."""
    if backoff.skipping():
        return
    key = known_key(account)
    try:
        pipe = get_redis_connection("default").pipeline(transaction=True)
        pipe.zadd(key, {ip: clock.now().timestamp()})
        pipe.zremrangebyrank(key, 0, -settings.LOGIN_KNOWN_ADDRESSES_MAX - 1)  # keep the newest
        pipe.expire(key, settings.LOGIN_KNOWN_ADDRESS_DAYS * 86400)
        pipe.execute()
    except redis.RedisError as error:
        backoff.failed(error)
