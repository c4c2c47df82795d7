"""Single-use codes (SPEC section 18): created in bulk for a template, each redeemed once
through the issuing core (coupons.issuing.coupon_redeem)."""

import secrets
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import IntegrityError, connection, transaction
from django.utils.translation import gettext as _
from MySQLdb.constants.ER import DUP_ENTRY as ER_DUP_ENTRY

from core.staff_audit import NOT_STAFF, StaffAudit
from coupons.errors import CodeCountInvalid, CodesCreationBusy, TemplateNotFound
from coupons.issuing import next_version, terms_change
from coupons.models import (
    CouponTemplate,
)
from coupons.models.single_use_codes import (
    MAX_SINGLE_USE_CODES_PER_REQUEST,
    SINGLE_USE_CODE_ALPHABET,
    SINGLE_USE_CODE_LENGTH,
    SingleUseCode,
    single_use_code_prefix_validate,
)
from coupons.shopper_list import published_terms_changed

# One INSERT per batch: measured at 100,000 codes (larger batches gained little and make one
# statement's packet larger): docs/measurements/2026-11-30-single-use-codes.md.
CODES_PER_INSERT = 5_000
# A batch that meets an existing code is made again; at 2**59 possible codes a second
# collision in one batch means something other than chance.
MAX_ATTEMPTS_PER_BATCH = 5
# A creation or import finding another one of the same template under way waits this long for
# it, then answers 409 codes_busy: less than the database client's read timeout (8 s,
# config/settings/base.py), which a 60 s wait outlasted: the second request lost its
# connection, answered 503 and opened its worker's breaker for the shoppers' claims.
CREATION_LOCK_WAIT_SECONDS = 5
_CODE_SPACE = len(SINGLE_USE_CODE_ALPHABET) ** SINGLE_USE_CODE_LENGTH


def single_use_code_new() -> str:
    """A code of SINGLE_USE_CODE_LENGTH characters from the alphabet without look-alikes,
    uniformly drawn from `secrets` (one draw, written in base 31)."""
    number = secrets.randbelow(_CODE_SPACE)
    characters = []
    for _position in range(SINGLE_USE_CODE_LENGTH):
        number, digit = divmod(number, len(SINGLE_USE_CODE_ALPHABET))
        characters.append(SINGLE_USE_CODE_ALPHABET[digit])
    return "".join(characters)


def single_use_codes_create(
    *,
    template_id: int,
    count: int,
    audit: StaffAudit = NOT_STAFF,
    prefix: str = "",
    codes_only: bool = False,
) -> int:
    """Create `count` (1..100,000) new unique single-use codes for a template and return how
    many were created. Each code issues the template once. Where else it is issued from is
    the staff member's explicit choice: with `codes_only` the template becomes codes-only,
    issued only by its single-use codes or by grants (it leaves the shop's list, and a claim
    by id or by its shared code is "not found"); without it the template keeps every way in
    it had and the codes are one more (a codes-only template stays so). The door's `audit`
    asks coupons.manage_codes and records it with the count and the choice. With a `prefix`
    (coupons.models.single_use_codes: letters and digits, upper-cased) each code starts with it and
    a dash: "SPRING-7KQ2MZ9XHR4T".

    The codes never outnumber the template's remaining total: `count` must be at most
    total - claimed_count - the template's unused codes (400 naming `count`). Creations of one
    template run one at a time (a named lock that claims, grants and pauses never take), and
    each batch is inserted in its own short transaction, so the foreign-key check's shared lock
    on the template row is held for one batch, not the whole creation (decision 0610). The
    limit is checked again under the template's row lock at the end, after any claims made
    meanwhile; on any failure the codes this call inserted are deleted again."""
    audit.check()
    if not isinstance(count, int) or isinstance(count, bool):
        raise CodeCountInvalid(fields={"count": [_("A whole number is required.")]})
    if not 1 <= count <= MAX_SINGLE_USE_CODES_PER_REQUEST:
        raise CodeCountInvalid(
            fields={
                "count": [
                    _("Must be between %(low)s and %(high)s.")
                    % {"low": 1, "high": MAX_SINGLE_USE_CODES_PER_REQUEST}
                ]
            },
        )
    prefix = single_use_code_prefix_validate(prefix)
    with one_creation_at_a_time(template_id):
        template = CouponTemplate.objects.filter(pk=template_id).first()
        if template is None:
            raise TemplateNotFound()
        _raise_if_over_remaining(template, adding=count)
        inserted: list[str] = []
        try:
            while len(inserted) < count:
                batch = min(CODES_PER_INSERT, count - len(inserted))
                inserted += _insert_batch(template_id=template_id, size=batch, prefix=prefix)
            _codes_created(template_id=template_id, count=count, audit=audit, codes_only=codes_only)
        except BaseException:
            delete_unused(inserted)
            raise
    return count


def _raise_if_over_remaining(template: CouponTemplate, *, adding: int) -> None:
    """Refuse codes that would outnumber the remaining total: claimed coupons plus unused codes
    plus `adding` may not pass `total`."""
    remaining, unused = codes_remaining(template)
    if adding > remaining:
        raise CodeCountInvalid(
            fields={
                "count": [
                    _(
                        "At most %(remaining)d more: the total is %(total)d, %(claimed)d claimed "
                        "and %(unused)d unused codes already out."
                    )
                    % {
                        "remaining": max(remaining, 0),
                        "total": template.total,
                        "claimed": template.claimed_count,
                        "unused": unused,
                    }
                ]
            },
        )


def _codes_created(*, template_id: int, count: int, audit: StaffAudit, codes_only: bool) -> None:
    """The creation's last, short transaction: under the template's row lock, the limit again
    (claims may have come in meanwhile), the template made codes-only if so chosen, the
    record."""
    with transaction.atomic():
        template = CouponTemplate.objects.select_for_update().filter(pk=template_id).first()
        if template is None:  # deleted meanwhile: its codes went with it
            raise TemplateNotFound()
        _raise_if_over_remaining(template, adding=0)
        if codes_only:
            codes_only_set(template)
        audit.record(template, {"count": count, "codes_only": template.has_single_use_codes})


def codes_remaining(template: CouponTemplate) -> tuple[int, int]:
    """How many more codes the template may have (its total less claimed coupons and unused
    codes), and how many unused codes it has."""
    unused = SingleUseCode.objects.filter(template_id=template.pk, used_at__isnull=True).count()
    return template.total - template.claimed_count - unused, unused


def codes_only_set(template: CouponTemplate) -> None:
    """Make a template codes-only, in the caller's transaction under its row lock: its terms'
    version grows and it leaves the shop's list. Nothing happens if it is so already."""
    if template.has_single_use_codes:
        return
    with terms_change(template):
        stamp = next_version(template.updated_at)
        CouponTemplate.objects.filter(pk=template.pk).update(
            has_single_use_codes=True, updated_at=stamp
        )
        template.has_single_use_codes, template.updated_at = True, stamp
        published_terms_changed()


@contextmanager
def one_creation_at_a_time(template_id: int) -> Iterator[None]:
    """A named lock per template (MariaDB's GET_LOCK, held by this connection's session):
    one creation or import of a template's codes at a time (a second one waits its turn up to
    CREATION_LOCK_WAIT_SECONDS, then CodesCreationBusy, 409), claims never see it.
    SQLite (local runs) has one writer at a time anyway."""
    if connection.vendor != "mysql":
        yield
        return
    name = f"{connection.settings_dict['NAME']}:single-use-codes:{template_id}"[-64:]
    with connection.cursor() as cursor:
        cursor.execute("SELECT GET_LOCK(%s, %s)", [name, CREATION_LOCK_WAIT_SECONDS])
        (taken,) = cursor.fetchone()
    if taken != 1:
        raise CodesCreationBusy()
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT RELEASE_LOCK(%s)", [name])


def delete_unused(codes: list[str]) -> None:
    """Take back codes a failed creation or import inserted (one already redeemed stays: it
    issued)."""
    for start in range(0, len(codes), CODES_PER_INSERT):
        chunk = codes[start : start + CODES_PER_INSERT]
        SingleUseCode.objects.filter(code__in=chunk, used_at__isnull=True).delete()


def _insert_batch(*, template_id: int, size: int, prefix: str = "") -> list[str]:
    """Insert `size` new codes in one transaction of their own; returns them."""
    for _attempt in range(MAX_ATTEMPTS_PER_BATCH):
        codes: set[str] = set()
        while len(codes) < size:
            codes.add(f"{prefix}-{single_use_code_new()}" if prefix else single_use_code_new())
        try:
            with transaction.atomic():  # a collision undoes this batch only
                SingleUseCode.objects.bulk_create(
                    [SingleUseCode(template_id=template_id, code=code) for code in codes]
                )
            return list(codes)
        except IntegrityError as error:
            if not _is_duplicate_code(error):
                raise
    raise IntegrityError(f"single-use codes kept colliding after {MAX_ATTEMPTS_PER_BATCH} tries")


def _is_duplicate_code(error: IntegrityError) -> bool:
    """A code that exists already (the only unique key a new code row can meet)."""
    if connection.vendor == "mysql":
        return error.args[0] == ER_DUP_ENTRY
    return "coupon_single_use_codes.code" in str(error)
