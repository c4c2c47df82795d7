"""deploy/galera: the production layout with three Galera nodes behind HAProxy (decision
0800), checked without a Docker daemon: docker-compose 1.29 validates and resolves the
compose file, HAProxy checks its config, and the parts that must agree do (the app's
services as in docker-compose.yml, the single writer as in the local cluster's HAProxy, the
check's account from HAProxy's address)."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from localservers.galera import Cluster

ROOT = Path(__file__).resolve().parents[2]
GALERA = ROOT / "deploy" / "galera"
SAMPLE_SECRETS = {
    "SECRET_KEY": "sample-only-" + "0123456789" * 5,
    "MYSQL_PASSWORD": "sample-password",
    "MYSQL_ROOT_PASSWORD": "sample-root-password",
    "RABBITMQ_PASSWORD": "sample-broker-password",
}
APP_SERVICES = ("app", "scheduler", "worker", "beat", "migrate", "nginx", "redis", "rabbitmq")


@pytest.fixture
def project(tmp_path) -> Path:
    """The repository's compose files and deploy/ beside a .env made from .env.example."""
    if shutil.which("docker-compose") is None:
        pytest.fail("docker-compose is missing: run scripts/ensure-test-deps (make test does).")
    lines = []
    for line in (ROOT / ".env.example").read_text().splitlines():
        key = line.split("=", 1)[0]
        if key in SAMPLE_SECRETS and line == f"{key}=":
            line = f"{key}={SAMPLE_SECRETS[key]}"
        lines.append(line)
    (tmp_path / ".env").write_text("\n".join(lines) + "\n")
    shutil.copy(ROOT / "docker-compose.yml", tmp_path / "docker-compose.yml")
    (tmp_path / "deploy").symlink_to(ROOT / "deploy")
    return tmp_path


def resolved(project: Path, *files: str, env: dict[str, str] | None = None) -> dict:
    command = ["docker-compose", "--project-directory", "."]
    for name in files:
        command += ["-f", name]
    result = subprocess.run(
        [*command, "config"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", **(env or {})},
    )
    assert result.returncode == 0, result.stderr
    return yaml.safe_load(result.stdout)


CLUSTER_FILE = "deploy/galera/docker-compose.cluster.yml"


def test_the_cluster_file_is_valid_and_the_app_reaches_the_database_through_haproxy(project):
    services = resolved(project, CLUSTER_FILE)["services"]

    assert {"galera1", "galera2", "galera3", "haproxy"} <= set(services)
    assert "mariadb" not in services
    app = services["app"]["environment"]
    assert app["DATABASE_URL"].endswith("@haproxy:3306/coupons")
    assert app["DATABASE_REPLICA_URL"].endswith("@haproxy:3307/coupons")
    for node in ("galera1", "galera2", "galera3"):
        volumes = " ".join(services[node]["volumes"])
        assert "galera.cnf:/etc/mysql/conf.d/galera.cnf:ro" in volumes
        assert f"{node}-data:/var/lib/mysql" in volumes


def test_the_app_services_are_docker_compose_yml_s_but_for_the_database(project):
    single = resolved(project, "docker-compose.yml")["services"]
    cluster = resolved(project, CLUSTER_FILE)["services"]

    for name in APP_SERVICES:
        ours, theirs = dict(cluster[name]), dict(single[name])
        for service in (ours, theirs):
            service.pop("depends_on", None)
            environment = dict(service.get("environment") or {})
            environment.pop("DATABASE_URL", None)
            environment.pop("DATABASE_REPLICA_URL", None)
            service["environment"] = environment
        assert ours == theirs, name


def test_no_node_bootstraps_unless_told_to_once(project):
    def commands(env: dict[str, str]) -> dict[str, list[str]]:
        services = resolved(project, CLUSTER_FILE, env=env)["services"]
        return {node: services[node]["command"] for node in ("galera1", "galera2", "galera3")}

    assert not any("--wsrep-new-cluster" in c for c in commands({}).values())
    told = commands({"GALERA2_NEW_CLUSTER": "--wsrep-new-cluster"})
    assert [node for node, c in told.items() if "--wsrep-new-cluster" in c] == ["galera2"]


def writer_servers(config: str) -> list[str]:
    """The `server` lines of the `listen writer` section."""
    section = config.split("listen writer", 1)[1].split("\nlisten ", 1)[0]
    return [line.strip() for line in section.splitlines() if line.strip().startswith("server ")]


def test_haproxy_sends_writes_to_one_node_as_the_local_cluster_does(project, tmp_path):
    production = (GALERA / "haproxy.cfg").read_text()
    cluster = Cluster(tmp_path / "cluster", 20000)
    cluster.base_dir.mkdir()
    cluster._write_haproxy_config()
    local = (cluster.base_dir / "haproxy.cfg").read_text()

    for config in (production, local):
        servers = writer_servers(config)
        assert len(servers) == 3
        assert [s for s in servers if not s.endswith(" backup")] == [servers[0]]
        assert "on-marked-up shutdown-backup-sessions" in servers[0]
        assert "option allbackups" not in config  # one backup at a time
        assert "on-marked-down shutdown-sessions" in config
        assert " rise 20 " in servers[0]  # node 1 takes the writes back after 20 checks
    # The check knows wsrep state: the compose layout's external check, the local cluster's
    # HTTP check (localservers/galera/health.py; decision 1001).
    assert "galera-check" in production
    assert "option httpchk" in local and "check port" in local
    checked = subprocess.run(
        ["haproxy", "-c", "-f", str(GALERA / "haproxy.cfg")], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stderr


def test_the_check_s_account_is_allowed_from_haproxy_s_address_only(project):
    services = resolved(project, CLUSTER_FILE)["services"]
    address = services["haproxy"]["networks"]["default"]["ipv4_address"]
    users = (GALERA / "initdb" / "10-cluster-users.sh").read_text()

    assert re.search(rf"CREATE USER IF NOT EXISTS 'haproxy'@'{re.escape(address)}';", users)
    assert "GRANT" not in users.split("'haproxy'@", 1)[1]  # no privileges
    galera = (GALERA / "galera.cnf").read_text()
    assert "wsrep_cluster_address = gcomm://galera1,galera2,galera3" in galera
    assert "wsrep_sst_method = mariabackup" in galera


def test_a_rejoining_node_takes_its_copy_from_a_backup_not_the_writer(project):
    """As the local cluster's my.cnf says (localservers/galera/configs.py): a donor is out of
    HAProxy's rotation while it sends, so galera1 never asks galera2, the first backup."""
    services = resolved(project, CLUSTER_FILE)["services"]
    donors = {
        node: next(arg for arg in services[node]["command"] if arg.startswith("--wsrep-sst-donor"))
        for node in ("galera1", "galera2", "galera3")
    }

    assert donors == {
        "galera1": "--wsrep-sst-donor=galera3,galera2,",
        "galera2": "--wsrep-sst-donor=galera3,galera1,",
        "galera3": "--wsrep-sst-donor=galera2,galera1,",
    }


def test_a_restarted_node_waits_past_the_survivors_eviction(project):
    """Docker restarts a killed container at once; each node's start waits longer than the
    survivors take to evict it (evs.inactive_timeout), as the local supervisor does."""
    services = resolved(project, CLUSTER_FILE)["services"]
    galera = (GALERA / "galera.cnf").read_text()
    inactive = float(re.search(r"evs\.inactive_timeout=PT(\d+(?:\.\d+)?)S", galera).group(1))

    for node in ("galera1", "galera2", "galera3"):
        entrypoint = services[node]["entrypoint"]
        wait = float(re.search(r"sleep (\d+(?:\.\d+)?);", entrypoint[2]).group(1))
        assert wait > inactive
        # "$$@" in the file: compose's escape for the shell's "$@" (config prints it escaped)
        assert re.search(r'exec docker-entrypoint\.sh "\$\$?@"', entrypoint[2])
