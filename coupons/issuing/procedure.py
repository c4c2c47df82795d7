"""The decision in one call (MySQL; decisions 0700, 1011): the stored procedure
`coupon_decide`, written from the guarded UPDATE and the coupon's row of claim_sql.py, and the
call that runs it. The row lock is taken and released inside the server, never held across
the client's Python."""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from accounts.authentication import (
    TOKEN_REVOKED,
    USER_INACTIVE,
    USER_NOT_FOUND,
    TokenCheck,
    token_holds_sql,
)
from coupons.issuing.claim_sql import (
    COUNT_THE_CLAIM_GUARD_TERMS,
    COUNT_THE_CLAIM_PARAMETERS,
    COUPON_COLUMNS,
    COUPON_TERMS_STILL,
    INSERT_COUPON_PARAMETERS,
    ClaimCount,
    CouponInsert,
)


@dataclass(frozen=True)
class Decided:
    """What the one-call decision did: the template's new count and the coupon's id (both
    None when it counted nothing), and how long the UPDATE waited for the row lock."""

    claimed_count: int | None
    coupon_id: int | None
    waited: timedelta


# The guarded UPDATE, the INSERT and the COMMIT in one round trip (a migration holds the
# procedure's text; tests/coupons/issuing/test_claim_procedure.py holds it to the generator). Its
# parameters: the guard's, then the row's not named already, then the Idempotency-Key record
# that commits with the coupon.
PROCEDURE_PARAMETER_TYPES = {
    "template_id": "BIGINT",
    "slot": "INT UNSIGNED",
    "window_opens_by": "DATETIME(6)",
    "now": "DATETIME(6)",
    "audience": "VARCHAR(16)",
    "reachable_with_codes": "BOOLEAN",
    "reachable_hidden": "BOOLEAN",
    "user_id": "INT",
    "coupon_valid_from": "DATETIME(6)",
    "coupon_valid_until": "DATETIME(6)",
    "source": "VARCHAR(16)",
    "granted_by_id": "INT",
    "grant_reason": "VARCHAR(255)",
    "grant_reason_key": "VARCHAR(64)",
    "template_valid_from": "DATETIME(6)",
    "template_valid_until": "DATETIME(6)",
    "template_valid_days": "INT UNSIGNED",
    "idempotency_record_id": "BIGINT",
    "token_digest": "VARCHAR(32)",
    "token_generation": "INT UNSIGNED",
}
# The user's checks a token asks for, made here when authentication left them to the call.
TOKEN_CHECK_PARAMETERS = ("token_digest", "token_generation")
PROCEDURE_PARAMETERS = tuple(
    dict.fromkeys(
        [
            *COUNT_THE_CLAIM_PARAMETERS,
            *INSERT_COUPON_PARAMETERS,
            "idempotency_record_id",
            *TOKEN_CHECK_PARAMETERS,
        ]
    )
)
CALL_DECIDE_SQL = f"CALL coupon_decide({', '.join(['%s'] * len(PROCEDURE_PARAMETERS))})"

# The procedure's refusals, each signalled with an error number of its own (SQLSTATE 45000),
# which the caller maps back by number (decision.py), never by the message's text.
RECORD_GONE = "idempotency record gone"  # the request's Idempotency-Key record was purged
SIGNALLED = {USER_NOT_FOUND: 30001, USER_INACTIVE: 30002, TOKEN_REVOKED: 30003, RECORD_GONE: 30004}
REFUSAL_OF_ERRNO = {errno: refusal for refusal, errno in SIGNALLED.items()}


def _signal(refusal: str) -> str:
    return (
        f"SIGNAL SQLSTATE '45000' SET MYSQL_ERRNO = {SIGNALLED[refusal]},"
        f" MESSAGE_TEXT = '{refusal}'"
    )


def coupon_decide_procedure() -> str:
    """CREATE PROCEDURE coupon_decide: the guarded UPDATE and the INSERT above, with the
    parameters named p_<name>; `now` inside the INSERT is the server's time after the lock
    (the wait counts against the window), and a coupon valid for N days from its claim has
    its window moved by the wait too. The Idempotency-Key record, when given, names the
    coupon before the COMMIT; gone, the decision rolls back ('idempotency record gone')."""
    named = {name: f"p_{name}" for name in PROCEDURE_PARAMETERS}
    after_lock = {
        **named,
        "now": "v_now",
        "coupon_valid_from": "p_coupon_valid_from + INTERVAL v_shift MICROSECOND",
        "coupon_valid_until": "p_coupon_valid_until + INTERVAL v_shift MICROSECOND",
    }
    parameters = ",\n".join(
        f"    IN p_{name} {PROCEDURE_PARAMETER_TYPES[name]}" for name in PROCEDURE_PARAMETERS
    )
    guard = _lines(COUNT_THE_CLAIM_GUARD_TERMS.format(**named), "\n       AND ")
    columns = ",\n            ".join(column for column, _ in COUPON_COLUMNS)
    values = ",\n               ".join(value for _, value in COUPON_COLUMNS).format(**after_lock)
    terms = _lines(COUPON_TERMS_STILL.format(**after_lock), "\n           AND ")
    token_holds = token_holds_sql(
        password="u.password",
        generation="g.generation",
        digest="p_token_digest",
        token_generation="p_token_generation",
    ).replace(" AND ", "\n                   AND ")
    insert = (
        f"INSERT INTO user_coupons (\n            {columns})\n"
        f"        SELECT {values}\n          FROM coupon_templates\n         WHERE {terms}"
    )
    return f"""CREATE PROCEDURE coupon_decide(
{parameters}
)
MODIFIES SQL DATA
SQL SECURITY INVOKER
BEGIN
    DECLARE v_sent DATETIME(6) DEFAULT NOW(6);
    DECLARE v_count INT UNSIGNED;
    DECLARE v_coupon_id BIGINT;
    DECLARE v_waited BIGINT;
    DECLARE v_shift BIGINT;
    DECLARE v_now DATETIME(6);
    DECLARE v_active BOOLEAN;
    DECLARE v_token_holds BOOLEAN;
    DECLARE EXIT HANDLER FOR SQLEXCEPTION
    BEGIN
        ROLLBACK;
        RESIGNAL;
    END;

    IF p_token_digest IS NOT NULL THEN
        SELECT MAX(u.is_active),
               MAX({token_holds})
          INTO v_active, v_token_holds
          FROM auth_user u
          LEFT JOIN accounts_tokengeneration g ON g.user_id = u.id
         WHERE u.id = p_user_id;
        IF v_active IS NULL THEN
            {_signal(USER_NOT_FOUND)};
        ELSEIF NOT v_active THEN
            {_signal(USER_INACTIVE)};
        ELSEIF NOT v_token_holds THEN
            {_signal(TOKEN_REVOKED)};
        END IF;
    END IF;

    UPDATE coupon_templates SET claimed_count = LAST_INSERT_ID(claimed_count + 1)
     WHERE {guard};
    IF ROW_COUNT() = 0 THEN
        ROLLBACK;
        SELECT NULL, NULL, NULL;
    ELSE
        SET v_count = LAST_INSERT_ID();
        SET v_waited = TIMESTAMPDIFF(MICROSECOND, v_sent, NOW(6));
        SET v_now = p_now + INTERVAL v_waited MICROSECOND;
        SET v_shift = IF(p_template_valid_days IS NULL, 0, v_waited);
        {insert};
        IF ROW_COUNT() = 0 THEN
            ROLLBACK;
            SELECT NULL, NULL, NULL;
        ELSE
            SET v_coupon_id = LAST_INSERT_ID();
            IF p_idempotency_record_id IS NOT NULL THEN
                UPDATE idempotency_records SET effect_id = v_coupon_id
                 WHERE id = p_idempotency_record_id;
                IF ROW_COUNT() = 0 THEN
                    {_signal(RECORD_GONE)};
                END IF;
            END IF;
            COMMIT;
            SELECT v_count, v_coupon_id, v_waited;
        END IF;
    END IF;
END
"""


def _lines(conditions: str, joint: str) -> str:
    """`conditions` with each top-level AND starting a line (the procedure is read by people)."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(conditions):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0 and conditions.startswith(" AND ", index):
            parts.append(conditions[start:index])
            start = index + len(" AND ")
    return joint.join([*parts, conditions[start:]])


def decide_in_one_call(
    cursor: Any,
    count: ClaimCount,
    insert: CouponInsert,
    adapt: Callable[[datetime], Any],
    *,
    idempotency_record_id: int | None,
    token_check: TokenCheck | None = None,
) -> Decided:
    """Count the claim and insert the coupon (and write its id into the request's
    Idempotency-Key record, if any), committed or rolled back by the server; the decision's
    transaction is over when this returns or raises. With `token_check`, the user is checked
    first (a 401 raised from here when it fails)."""
    values = {
        **insert.values(adapt),
        **count.values(adapt),
        "idempotency_record_id": idempotency_record_id,
        "token_digest": None if token_check is None else token_check.claims.password_digest,
        "token_generation": None if token_check is None else token_check.claims.generation,
    }
    cursor.execute(CALL_DECIDE_SQL, [values[name] for name in PROCEDURE_PARAMETERS])
    claimed_count, coupon_id, waited = cursor.fetchone()
    return Decided(claimed_count, coupon_id, timedelta(microseconds=waited or 0))
