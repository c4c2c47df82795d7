"""List costs with large data: `GET /api/coupons` over 1,000 templates and
`GET /api/coupons/mine` (first and last page) for a user holding 10,000 coupons; sequential
latency, and the SQL statements per request against the same request with small data."""

from bench import load
from bench.harness import Harness
from bench.progress import log
from bench.results import ReadRow, Reads

PAGE_SIZE = 20
LIST = "/api/coupons"
MINE = "/api/coupons/mine"


def run(harness: Harness) -> Reads:
    from bench import seed

    sizes = harness.sizes
    small, heavy = harness.users("reader", 2)
    # Small data: one template on the page (an empty page skips the page query).
    seed.create_templates("list-small", 1, total=1_000, per_user_limit=1)
    small_queries = {"list": count_queries(LIST, small.id)}
    template_ids = seed.create_templates(
        "list", sizes.list_templates, total=1_000, per_user_limit=sizes.mine_per_template
    )
    seed.give_coupons(small.id, template_ids[:1], 1)
    held = seed.give_coupons(heavy.id, template_ids, sizes.mine_per_template)
    seed.analyze_tables()
    small_queries["mine"] = count_queries(MINE, small.id)
    log(f"[reads] {len(template_ids)} templates; reader holds {held} coupons")
    last_page = max(1, -(-held // PAGE_SIZE))
    rows = []
    for name, path, family in (
        ("list", LIST, "list"),
        ("mine_first", MINE, "mine"),
        ("mine_last", f"{MINE}?page={last_page}", "mine"),
    ):
        raw = harness.latency_run(
            [("GET", path, heavy.token)] * sizes.read_requests,
            concurrency=1,
            warmup=[("GET", path, heavy.token)] * 10,
        )
        row = ReadRow(
            name=name,
            path=path,
            load=load.to_load([raw], requests=sizes.read_requests, concurrency=1),
            queries=count_queries(path, heavy.id),
            queries_small_data=small_queries[family],
        )
        log(
            f"[reads {name}] p50 {row.load.p50_ms} ms, p99 {row.load.p99_ms} ms,"
            f" statuses {dict(row.load.statuses)}; queries {row.queries}"
        )
        rows.append(row)
    return Reads(
        templates=len(template_ids),
        coupons_held=held,
        page_size=PAGE_SIZE,
        last_page=last_page,
        rows=tuple(rows),
    )


def count_queries(path: str, user_id: int) -> int:
    """SQL statements one request runs: the request is served in-process by Django's test
    client against the bench database under CaptureQueriesContext (after one warm-up request,
    so connection set-up is not counted). Authentication's user lookup counts."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from rest_framework_simplejwt.tokens import AccessToken

    user = get_user_model().objects.get(pk=user_id)
    client = Client(HTTP_AUTHORIZATION=f"Bearer {AccessToken.for_user(user)}")
    client.get(path)
    with CaptureQueriesContext(connection) as captured:
        response = client.get(path)
    if response.status_code != 200:
        raise RuntimeError(f"GET {path} answered {response.status_code} in-process")
    return len(captured.captured_queries)
