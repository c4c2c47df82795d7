"""The claim's procedure as `coupons.issuing.procedure.coupon_decide_procedure()` writes it
(decision 1018): 0022's, with the token's password digest compared as bytes (a collation folded
case and padded spaces, so a lower-case or space-padded digest passed) and each refusal
signalled with an error number of its own (30001-30004), which the caller maps by number.
The text is kept here as it was made: tests/coupons/issuing/test_claim_procedure.py fails when the
generator and the latest migration that defines the procedure differ."""

import importlib

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
    IN p_template_valid_days INT UNSIGNED,
    IN p_idempotency_record_id BIGINT,
    IN p_token_digest VARCHAR(32),
    IN p_token_generation INT UNSIGNED
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
               MAX(CAST(UPPER(MD5(u.password)) AS BINARY) = CAST(p_token_digest AS BINARY)
                   AND COALESCE(g.generation, 0) = p_token_generation)
          INTO v_active, v_token_holds
          FROM auth_user u
          LEFT JOIN accounts_tokengeneration g ON g.user_id = u.id
         WHERE u.id = p_user_id;
        IF v_active IS NULL THEN
            SIGNAL SQLSTATE '45000' SET MYSQL_ERRNO = 30001, MESSAGE_TEXT = 'user not found';
        ELSEIF NOT v_active THEN
            SIGNAL SQLSTATE '45000' SET MYSQL_ERRNO = 30002, MESSAGE_TEXT = 'user inactive';
        ELSEIF NOT v_token_holds THEN
            SIGNAL SQLSTATE '45000' SET MYSQL_ERRNO = 30003, MESSAGE_TEXT = 'token revoked';
        END IF;
    END IF;

    UPDATE coupon_templates SET claimed_count = LAST_INSERT_ID(claimed_count + 1)
     WHERE id = p_template_id
       AND claimed_count < total
       AND per_user_limit >= p_slot
       AND valid_from <= p_window_opens_by
       AND valid_until >= p_now
       AND paused_at IS NULL
       AND audience = p_audience
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
        INSERT INTO user_coupons (
            template_id,
            user_id,
            slot,
            status,
            valid_from,
            valid_until,
            source,
            granted_by_id,
            grant_reason,
            grant_reason_key,
            created_at,
            updated_at)
        SELECT id,
               p_user_id,
               p_slot,
               'unused',
               p_coupon_valid_from + INTERVAL v_shift MICROSECOND,
               p_coupon_valid_until + INTERVAL v_shift MICROSECOND,
               p_source,
               p_granted_by_id,
               p_grant_reason,
               p_grant_reason_key,
               v_now,
               v_now
          FROM coupon_templates
         WHERE id = p_template_id
           AND valid_from <= p_window_opens_by
           AND valid_until >= v_now
           AND valid_from = p_template_valid_from
           AND valid_until = p_template_valid_until
           AND (valid_days = p_template_valid_days OR (valid_days IS NULL AND p_template_valid_days IS NULL));
        IF ROW_COUNT() = 0 THEN
            ROLLBACK;
            SELECT NULL, NULL, NULL;
        ELSE
            SET v_coupon_id = LAST_INSERT_ID();
            IF p_idempotency_record_id IS NOT NULL THEN
                UPDATE idempotency_records SET effect_id = v_coupon_id
                 WHERE id = p_idempotency_record_id;
                IF ROW_COUNT() = 0 THEN
                    SIGNAL SQLSTATE '45000' SET MYSQL_ERRNO = 30004, MESSAGE_TEXT = 'idempotency record gone';
                END IF;
            END IF;
            COMMIT;
            SELECT v_count, v_coupon_id, v_waited;
        END IF;
    END IF;
END
"""

# Reversed, the procedure is 0022's again.
PREVIOUS = importlib.import_module("coupons.migrations.0022_claim_procedure_checks_the_token").CREATE


def create_procedure(sql):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor != "mysql":
            return
        schema_editor.execute(DROP)
        schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    atomic = False  # CREATE PROCEDURE commits: MySQL has no transactional DDL

    dependencies = [("coupons", "0022_claim_procedure_checks_the_token")]

    operations = [
        migrations.RunPython(
            create_procedure(CREATE), create_procedure(PREVIOUS), elidable=False
        ),
    ]
