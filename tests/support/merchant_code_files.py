"""A merchant's file of codes, and the codes a template has, for the import's tests."""

from coupons.models import SingleUseCode


def csv_file(*codes: str | None) -> bytes:
    """A merchant's CSV: a note and the code on each line; None is a blank line."""
    lines = ["note,code", *("" if code is None else f"x,{code}" for code in codes)]
    return "\n".join(lines).encode()


def codes_of(template) -> set[str]:
    return set(SingleUseCode.objects.filter(template=template).values_list("code", flat=True))
