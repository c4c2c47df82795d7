"""Single-use codes (SPEC section 18): created in bulk for a template, each redeemed once
through the issuing core (coupons.services.issuing.coupon_redeem)."""

import secrets

from django.db import IntegrityError, connection, transaction
from MySQLdb.constants.ER import DUP_ENTRY as ER_DUP_ENTRY

from accounts.staff_actions import Actor, StaffAction, staff_action_check, staff_action_record
from coupons.errors import TemplateInvalid, TemplateNotFound
from coupons.models import (
    CouponTemplate,
)
from coupons.services.terms_cache import next_version, terms_change
from coupons.shopper_list import published_terms_changed
from coupons.single_use_codes import (
    MAX_SINGLE_USE_CODES_PER_REQUEST,
    SINGLE_USE_CODE_ALPHABET,
    SINGLE_USE_CODE_LENGTH,
    SingleUseCode,
    single_use_code_prefix_validate,
)

# One INSERT per batch: measured at 100,000 codes (larger batches gained little and make one
# statement's packet larger): docs/measurements/2026-11-30-single-use-codes.md.
CODES_PER_INSERT = 5_000
# A batch that meets an existing code is made again; at 2**59 possible codes a second
# collision in one batch means something other than chance.
MAX_ATTEMPTS_PER_BATCH = 5
_CODE_SPACE = len(SINGLE_USE_CODE_ALPHABET) ** SINGLE_USE_CODE_LENGTH


def single_use_code_new() -> str:
    """A code of SINGLE_USE_CODE_LENGTH characters from the alphabet without look-alikes,
    uniformly drawn from `secrets` (one draw, written in base 31)."""
    number = secrets.randbelow(_CODE_SPACE)
    characters = []
    for _ in range(SINGLE_USE_CODE_LENGTH):
        number, digit = divmod(number, len(SINGLE_USE_CODE_ALPHABET))
        characters.append(SINGLE_USE_CODE_ALPHABET[digit])
    return "".join(characters)


def single_use_codes_create(
    *, template_id: int, count: int, actor: Actor | None = None, prefix: str = ""
) -> int:
    """Create `count` (1..100,000) new unique single-use codes for a template and return how
    many were created. From then on the template is issued only by its single-use codes or by
    grants (not by id, nor by its shared code). `actor` must hold coupons.manage_codes and
    is recorded with the count. All or nothing, in its own transaction. With a `prefix`
    (coupons.single_use_codes: letters and digits, upper-cased) each code starts with it and
    a dash: "SPRING-7KQ2MZ9XHR4T"."""
    staff_action_check(actor=actor, action=StaffAction.CODES_CREATE)
    if not isinstance(count, int) or isinstance(count, bool):
        raise TemplateInvalid(fields={"count": ["A whole number is required."]})
    if not 1 <= count <= MAX_SINGLE_USE_CODES_PER_REQUEST:
        raise TemplateInvalid(
            fields={"count": [f"Must be between 1 and {MAX_SINGLE_USE_CODES_PER_REQUEST}."]}
        )
    prefix = single_use_code_prefix_validate(prefix)
    if not CouponTemplate.objects.filter(pk=template_id).exists():
        raise TemplateNotFound()
    with transaction.atomic():
        created = 0
        while created < count:
            batch = min(CODES_PER_INSERT, count - created)
            _insert_batch(template_id=template_id, size=batch, prefix=prefix)
            created += batch
        # Last, so the template's row is locked only for the commit, not the inserts.
        template = CouponTemplate.objects.select_for_update().filter(pk=template_id).first()
        if template is None:  # deleted meanwhile: its codes went with it
            raise TemplateNotFound()
        if not template.has_single_use_codes:
            with terms_change(template):
                stamp = next_version(template.updated_at)  # the terms' version grows
                CouponTemplate.objects.filter(pk=template_id).update(
                    has_single_use_codes=True, updated_at=stamp
                )
                template.has_single_use_codes, template.updated_at = True, stamp
                published_terms_changed()  # it leaves the list
        staff_action_record(
            actor=actor, action=StaffAction.CODES_CREATE, target=template, amounts={"count": count}
        )
    return created


def _insert_batch(*, template_id: int, size: int, prefix: str = "") -> None:
    for _ in range(MAX_ATTEMPTS_PER_BATCH):
        codes: set[str] = set()
        while len(codes) < size:
            codes.add(f"{prefix}-{single_use_code_new()}" if prefix else single_use_code_new())
        try:
            with transaction.atomic():  # a savepoint: a collision undoes this batch only
                SingleUseCode.objects.bulk_create(
                    [SingleUseCode(template_id=template_id, code=code) for code in codes]
                )
            return
        except IntegrityError as error:
            if not _is_duplicate_code(error):
                raise
    raise IntegrityError(f"single-use codes kept colliding after {MAX_ATTEMPTS_PER_BATCH} tries")


def _is_duplicate_code(error: IntegrityError) -> bool:
    """A code that exists already (the only unique key a new code row can meet)."""
    if connection.vendor == "mysql":
        return error.args[0] == ER_DUP_ENTRY
    return "coupon_single_use_codes.code" in str(error)
