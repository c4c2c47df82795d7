"""The claim's decision in one round trip on MySQL/MariaDB (SPEC section 21,
docs/decisions/0700-claim-decision-in-one-call.md): a stored procedure runs the guarded UPDATE,
the INSERT and the COMMIT, so the template's row lock is held by the server alone, never
across the client's Python. SQLite (`make run` without DATABASE_URL) has no procedures and
keeps the statements of coupons/issuing/claim_sql.py.

The body is this migration's own copy of the rule (a later change to the guard is a new
migration); tests/coupons/issuing/test_claim_sql_grid.py holds it to `coupons.rules.claim_state`.

- The UPDATE is COUNT_THE_CLAIM_SQL, visibility included (a claim by id reaches public
  templates only).
- `now` for the INSERT is the caller's `now` plus the time the UPDATE waited for the lock,
  measured by the server (NOW(6) moves on with each statement of a procedure: from the CALL's
  start to the statement after the UPDATE), so a window that closed during the wait issues
  nothing, and a coupon with its own valid_days window starts at that moment. A session that
  sets `timestamp` freezes that clock (the tests' frozen clock does, for the server too).
- Any error rolls back the whole decision (a taken single-use code too) before it reaches
  the client (RESIGNAL keeps its number and message: the taken slot's duplicate key).
- It answers one row: the template's new count, the coupon's id and the wait in
  microseconds, or three NULLs when it counted nothing (rolled back)."""

from django.db import migrations

DROP = "DROP PROCEDURE IF EXISTS coupon_decide"
CREATE = """
CREATE PROCEDURE coupon_decide(
    IN p_template_id BIGINT,
    IN p_slot INT UNSIGNED,
    IN p_window_opens_by DATETIME(6),
    IN p_now DATETIME(6),
    IN p_audience VARCHAR(16),
    IN p_reachable_with_codes BOOLEAN,
    IN p_reachable_hidden BOOLEAN,
    IN p_user_id INT,
    IN p_coupon_valid_from DATETIME(6),
    IN p_coupon_valid_until DATETIME(6),
    IN p_source VARCHAR(16),
    IN p_granted_by_id INT,
    IN p_grant_reason VARCHAR(255),
    IN p_grant_reason_key VARCHAR(64),
    IN p_template_valid_from DATETIME(6),
    IN p_template_valid_until DATETIME(6),
    IN p_template_valid_days INT UNSIGNED
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
    DECLARE EXIT HANDLER FOR SQLEXCEPTION
    BEGIN
        ROLLBACK;
        RESIGNAL;
    END;

    UPDATE coupon_templates SET claimed_count = LAST_INSERT_ID(claimed_count + 1)
     WHERE id = p_template_id AND claimed_count < total AND per_user_limit >= p_slot
       AND valid_from <= p_window_opens_by AND valid_until >= p_now
       AND paused_at IS NULL AND audience = p_audience
       AND (has_single_use_codes = 0 OR p_reachable_with_codes)
       AND (visibility = 'public' OR p_reachable_hidden);
    IF ROW_COUNT() = 0 THEN
        ROLLBACK;
        SELECT NULL, NULL, NULL;
    ELSE
        SET v_count = LAST_INSERT_ID();
        SET v_waited = TIMESTAMPDIFF(MICROSECOND, v_sent, NOW(6));
        SET v_now = p_now + INTERVAL v_waited MICROSECOND;
        SET v_shift = IF(p_template_valid_days IS NULL, 0, v_waited);
        INSERT INTO user_coupons (template_id, user_id, slot, status, valid_from, valid_until,
                                  source, granted_by_id, grant_reason, grant_reason_key,
                                  created_at, updated_at)
        SELECT id, p_user_id, p_slot, 'unused',
               p_coupon_valid_from + INTERVAL v_shift MICROSECOND,
               p_coupon_valid_until + INTERVAL v_shift MICROSECOND,
               p_source, p_granted_by_id, p_grant_reason, p_grant_reason_key, v_now, v_now
          FROM coupon_templates
         WHERE id = p_template_id AND valid_until >= v_now
           AND valid_from = p_template_valid_from AND valid_until = p_template_valid_until
           AND (valid_days = p_template_valid_days
                OR (valid_days IS NULL AND p_template_valid_days IS NULL));
        IF ROW_COUNT() = 0 THEN
            ROLLBACK;
            SELECT NULL, NULL, NULL;
        ELSE
            SET v_coupon_id = LAST_INSERT_ID();
            COMMIT;
            SELECT v_count, v_coupon_id, v_waited;
        END IF;
    END IF;
END
"""


def create_procedure(apps, schema_editor):
    if schema_editor.connection.vendor != "mysql":
        return
    schema_editor.execute(DROP)
    schema_editor.execute(CREATE)


def drop_procedure(apps, schema_editor):
    if schema_editor.connection.vendor == "mysql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    atomic = False  # CREATE PROCEDURE commits: MySQL has no transactional DDL

    dependencies = [
        ("coupons", "0009_staff_permissions_and_audit"),
    ]

    operations = [
        migrations.RunPython(create_procedure, drop_procedure, elidable=False),
    ]
