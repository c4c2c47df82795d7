"""Grant a coupon template to the users listed in a file, through the same service (and so the
same issuing core) as the admin API.

Safe to re-run: a grant is idempotent per (template, user, reason), held by a unique index,
so running the same command again (after a crash, or twice by mistake) issues nothing twice;
the users already served are reported as "already granted". A new grant for another reason
is a new --reason.

A grant is a staff action: it runs as the staff member named by --as (formerly --granted-by),
who must hold coupons.grant_coupons, and is recorded in the template's history under their
name like a grant from the admin or the API (backoffice/staff_actions.py): one entry for the
whole file, brought up to date with each batch of GRANT_BATCH_SIZE users, which commits with
its coupons; progress is printed after each batch."""

from dataclasses import asdict
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from backoffice.staff_actions import StaffAction, staff_audit, staff_may
from core.domain_errors import DomainError
from coupons import selectors
from coupons.services import grants


class Command(BaseCommand):
    help = (
        "Grant template TEMPLATE_ID to the users in --users-file (one per line: a line of "
        "digits is a user id, anything else a username; blank lines and # comments skipped)."
    )

    def add_arguments(self, parser):
        parser.add_argument("template_id", type=int)
        parser.add_argument("--users-file", required=True, type=Path)
        parser.add_argument(
            "--reason",
            required=True,
            help="Why (recorded on each coupon). Re-running with the same reason grants "
            "nothing twice.",
        )
        parser.add_argument(
            "--as",
            "--granted-by",
            dest="acting_username",
            required=True,
            metavar="USERNAME",
            help="the staff member granting (needs coupons.grant_coupons); recorded as the "
            "granter and in the template's history",
        )

    def handle(
        self,
        *args: object,
        template_id: int,
        users_file: Path,
        reason: str,
        acting_username: str,
        **options: object,
    ) -> None:
        actor = self.acting_staff(acting_username)
        entries = self.read_entries(users_file)
        lookup = selectors.users_by_name_or_id(entries)
        user_ids, unknown_names = lookup.user_ids, lookup.unknown_usernames
        self.stdout.write(
            f"Granting template {template_id} to {len(user_ids)} user(s)"
            f" ({len(unknown_names)} unknown username(s)), reason: {reason!r}"
        )
        totals: dict[str, int] = {}
        if user_ids:
            try:
                result = grants.coupon_grant(
                    template_id=template_id,
                    user_ids=user_ids,
                    reason=reason,
                    granted_by_id=actor.pk,
                    on_batch=lambda done, _batch: self.stdout.write(f"  {done}/{len(user_ids)}"),
                    audit=staff_audit(actor, StaffAction.COUPONS_GRANT),
                    max_users=len(user_ids),  # the whole file: one run, one audit entry
                    unknown_names=len(unknown_names),
                )
            except DomainError as error:
                raise CommandError(f"{error.detail} {error.fields or ''}".strip()) from error
            for outcome, ids in asdict(result).items():
                totals[outcome] = len(ids)
                if ids and outcome not in ("granted", "already_granted"):
                    self.stdout.write(f"  {outcome}: {', '.join(map(str, ids))}")
        if unknown_names:
            totals["unknown_user"] = totals.get("unknown_user", 0) + len(unknown_names)
            self.stdout.write(f"  unknown usernames: {', '.join(unknown_names)}")
        summary = ", ".join(f"{outcome} {count}" for outcome, count in totals.items())
        self.stdout.write(self.style.SUCCESS(f"Done: {summary or 'nobody to grant'}."))

    def read_entries(self, users_file: Path) -> list[str]:
        try:
            lines = users_file.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as error:
            raise CommandError(f"Cannot read {users_file}: {error}") from error
        return [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]

    def acting_staff(self, username: str):
        staff = get_user_model().objects.filter(username=username, is_staff=True).first()
        if staff is None:
            raise CommandError(f"No staff user named {username!r}.")
        if not staff_may(staff, StaffAction.COUPONS_GRANT):
            raise CommandError(f"{username!r} does not have the permission coupons.grant_coupons.")
        return staff
