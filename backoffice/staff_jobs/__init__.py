"""Long staff work as tasks (SPEC section 34): a merchant code import and its preview, a grant
to the users of a file, exports of templates, codes and records, each a StaffJob row run by a
Celery worker (tasks.py) and watched on its admin page (admin.py): state, progress, counts,
problems, the result file, who started it, cancel."""
