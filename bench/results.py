"""What one benchmark run measured, as frozen dataclasses: a load as the client saw it, the
database facts read back after it, each scenario's row, and the run's own facts (machine,
server, sizes). `asdict()` of `RunDocument` is the JSON that `make bench` writes;
bench.report renders and judges the same objects."""

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Sizes:
    baseline_requests: int
    baseline_warmup: int
    concurrency: int  # connections of every throughput row
    selling_requests: int
    selling_warmup: int
    storm_users: int
    storm_total: int
    sold_out_requests: int
    scale_existing: tuple[int, ...]
    scale_sequential: int
    scale_concurrent: int
    scale_concurrency: int
    list_templates: int
    mine_per_template: int
    read_requests: int
    hot_row_seconds: float  # each storm of the database-alone row (scripts/measure_hot_row.py)
    staff_job_rows: int  # codes imported and users granted from one file each (SPEC section 34)


@dataclass(frozen=True)
class Target:
    target: str
    wanted: str
    measured: str
    verdict: str  # PASS, MISS or n/a (the scenario did not run)


@dataclass(frozen=True)
class CpuShare:
    """Average CPU cores each party used during one load (bench.cpu)."""

    app: float
    mariadb: float
    redis: float
    load_generator: float
    machine: float
    other: float  # the machine minus the parties above: other users of the machine


@dataclass(frozen=True)
class Work:
    """What the servers did per answered request during one load, from their own counters
    (bench.work): SQL statements, connection health-check pings, Redis commands."""

    statements: float
    pings: float
    redis_commands: float | None  # None: Redis was stopped
    statements_by_kind: Mapping[str, float] = field(default_factory=dict)
    redis_by_command: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Load:
    """One load run as the client saw it: `requests` planned, `answered` received."""

    generator: str  # "wrk" or "aiohttp" (bench/README.md says which scenario uses which)
    requests: int
    answered: int
    concurrency: int
    seconds: float  # from the first request sent to the last answer received
    rps: float  # answered / seconds
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    statuses: Mapping[str, int]
    codes: Mapping[str, int]  # the error "code" of 4xx JSON bodies
    # From the first request to the last 2xx answer, when some answers were 2xx (wrk only).
    seconds_to_last_2xx: float | None = None
    cpu: CpuShare | None = None
    work: Work | None = None  # throughput rows only (bench.work)

    @property
    def server_errors(self) -> int:
        return sum(count for status, count in self.statuses.items() if status.startswith("5"))

    @property
    def missing(self) -> int:
        """Requests that got no HTTP answer (broken connections, timeouts)."""
        return self.requests - self.answered

    def count(self, status: int) -> int:
        return self.statuses.get(str(status), 0)

    def cpu_ms_per_answer(self, *parties: str) -> float | None:
        """CPU milliseconds the named parties (CpuShare fields) spent per answer: less
        sensitive to other users of a shared machine than req/s, which they slow down."""
        if self.cpu is None or not self.answered:
            return None
        cores = sum(getattr(self.cpu, party) for party in parties)
        return 1000 * cores * self.seconds / self.answered

    @property
    def rps_to_last_2xx(self) -> float | None:
        """2xx answers per second until the last one: a storm's selling part."""
        if not self.seconds_to_last_2xx:
            return None
        return sum(n for s, n in self.statuses.items() if s.startswith("2")) / (
            self.seconds_to_last_2xx
        )


@dataclass(frozen=True)
class ClaimFacts:
    """What the database (and the bench's Redis) hold for one template after a load."""

    rows: int
    distinct_users: int
    claimed_count: int
    total: int
    redis_counter: int | None  # None: not read (Redis stopped, or rows seeded behind its back)


@dataclass(frozen=True)
class Exactness:
    """The verdict of bench.exactness.check: empty `mismatches` means exact."""

    expected_rows: int
    expected_201: int
    facts: ClaimFacts
    mismatches: tuple[str, ...]

    @property
    def exact(self) -> bool:
        return not self.mismatches


@dataclass(frozen=True)
class Profile:
    """py-spy's summary of the workers during one scenario (bench.profiling, `--profile`):
    shares of request-serving wall time."""

    file: str  # the speedscope JSON beside the results
    request_thread_seconds: float
    markers: Mapping[str, float]  # inclusive share of each function of bench.profiling.MARKERS
    top_self: tuple[tuple[str, float], ...]  # innermost frames, largest share first


@dataclass(frozen=True)
class ClaimRow:
    """Claims sent at one template, and whether the database agrees with the answers."""

    template_id: int
    total: int
    redis_up: bool
    load: Load
    exactness: Exactness
    mariadb_counters: Mapping[str, int] = field(default_factory=dict)
    profile: Profile | None = None


@dataclass(frozen=True)
class HotRowStorm:
    """One storm of scripts/measure_hot_row.py: claims on the bench's own mariadbd, no app."""

    label: str
    claims: int
    seconds: float
    per_second: float
    row_lock_ms_per_claim: float  # the server's Innodb_row_lock_time per claim issued
    row_lock_waits: int


@dataclass(frozen=True)
class HotRow:
    """The database alone on the hot row (SPEC section 21): what MariaDB does with the claim's
    statements and with its one call, at the connections the app can have deciding at once."""

    connections: int
    decision_p50_ms: float  # one decision on one connection, no contention
    storms: tuple[HotRowStorm, ...]
    cpu: CpuShare | None = None  # mariadb, and load_generator: the script's own Python

    def storm(self, starts: str) -> HotRowStorm | None:
        return next((storm for storm in self.storms if storm.label.startswith(starts)), None)


@dataclass(frozen=True)
class ScaleRow:
    """Claim latency on a template already holding `existing_claims` coupons."""

    existing_claims: int
    template_id: int
    sequential: Load
    concurrent: Load
    exactness: Exactness


@dataclass(frozen=True)
class ReadRow:
    name: str
    path: str
    load: Load
    queries: int  # SQL statements per request with the large data
    queries_small_data: int


@dataclass(frozen=True)
class Reads:
    templates: int
    coupons_held: int
    page_size: int
    last_page: int
    rows: tuple[ReadRow, ...]

    def row(self, name: str) -> ReadRow | None:
        return next((row for row in self.rows if row.name == name), None)


@dataclass(frozen=True)
class StaffJobRow:
    name: str
    rows: int  # the codes or users of the file
    seconds: float  # the upload and the whole job
    state: str
    outcome: str
    made: int  # codes imported or coupons granted, counted in the database afterwards


@dataclass(frozen=True)
class StaffJobs:
    codes_file_bytes: int
    users_file_bytes: int
    rows: tuple[StaffJobRow, ...]

    def row(self, name: str) -> StaffJobRow | None:
        return next((row for row in self.rows if row.name == name), None)


@dataclass(frozen=True)
class ServerComparison:
    """The same rows again, in the same run, under the other app server (bench.processes):
    bare DRF, the baseline, the list, the selling phase, the storm and the sold-out claims."""

    server: str
    bare_drf: Load
    baseline: Load
    shopper_list: Load
    selling: ClaimRow
    storm: ClaimRow | None = None
    sold_out: ClaimRow | None = None
    empty_view: Load | None = None


@dataclass(frozen=True)
class Results:
    baseline: Load
    server: str = "gthread"  # what the rows ran under (bench.processes.SERVERS)
    # GET /bench/bare: DRF's empty view (no authentication, no database) through the whole
    # middleware stack; GET /bench/empty: the same view with no middleware at all.
    bare_drf: Load | None = None
    empty_view: Load | None = None
    hot_row: HotRow | None = None
    shopper_list: Load | None = None  # GET /api/coupons, a page of 20, at the baseline's load
    selling: ClaimRow | None = None
    selling_galera: ClaimRow | None = None  # the same, through HAProxy and 3 Galera nodes
    storm: ClaimRow | None = None
    sold_out: ClaimRow | None = None
    storm_redis_stopped: ClaimRow | None = None
    scale: tuple[ScaleRow, ...] = ()
    reads: Reads | None = None
    staff_jobs: StaffJobs | None = None
    comparison: ServerComparison | None = None


@dataclass(frozen=True)
class Machine:
    cpu: str
    cores: int | None
    platform: str
    python: str
    mariadb: str
    redis: str
    wrk: str


@dataclass(frozen=True)
class Server:
    description: str  # the server, its workers and threads
    server: str  # bench.processes.SERVERS
    settings: str


@dataclass(frozen=True)
class RunDocument:
    """One run as `make bench` writes it to bench/results/<timestamp>.json."""

    started_at: str  # ISO 8601, whole seconds
    seconds: float
    command: str
    mode: str  # "quick" or "full"
    sizes: Sizes
    machine: Machine
    server: Server
    results: Results
    targets: "tuple[Target, ...]"
