"""The bench's Galera row (bench/scenarios/galera.py): it is skipped, not failed, when the
cluster is turned off, and while it seeds, this process's Django talks to the cluster and
then to the single node again."""

import pytest
from django.db import connection, connections

from bench.scenarios import galera


def test_the_row_is_skipped_with_a_reason_when_turned_off(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("BENCH_GALERA", "0")

    assert galera.start_cluster(tmp_path / "galera") is None
    assert "[galera] skipped: BENCH_GALERA=0" in capsys.readouterr().err
    assert not (tmp_path / "galera").exists()


@pytest.mark.django_db(transaction=True)
def test_django_talks_to_the_other_database_inside_the_block_and_back_after():
    own = connection.settings_dict["NAME"]
    host, port = connection.settings_dict["HOST"] or "127.0.0.1", connection.settings_dict["PORT"]

    with galera.django_database_at(f"mysql://root@{host}:{port or 3306}/mysql"):
        with connection.cursor() as cursor:
            cursor.execute("SELECT DATABASE()")
            assert cursor.fetchone() == ("mysql",)
        assert connections["decision"].settings_dict["NAME"] == "mysql"

    with connection.cursor() as cursor:
        cursor.execute("SELECT DATABASE()")
        assert cursor.fetchone() == (own,)
    assert connections["decision"].settings_dict["NAME"] == own
