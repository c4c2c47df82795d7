"""config/serve.py's own pieces: the metrics directory set before any worker starts, and the
one granian warning that reads as a fault at every start dropped, no other line."""

import logging
import os

from config import serve


def record(message: str, level: int = logging.WARNING) -> logging.LogRecord:
    return logging.LogRecord("_granian", level, __file__, 1, message, None, None)


def test_only_the_threads_warning_is_dropped():
    keep = serve.ThreadsOnPurpose()

    assert not keep.filter(record("Configuration allows spawning up to 8 Python threads, ..."))
    assert keep.filter(record("Unexpected exit from worker-1", logging.ERROR))
    assert keep.filter(record("Starting granian (main PID: 1)", logging.INFO))


def test_an_operators_metrics_directory_is_emptied_and_kept(tmp_path, monkeypatch):
    directory = tmp_path / "metrics"
    directory.mkdir()
    (directory / "counter_123.db").write_bytes(b"an earlier server's values")
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(directory))

    assert serve.metrics_directory() is None  # not the server's to remove
    assert directory.is_dir() and list(directory.iterdir()) == []


def test_without_one_the_server_makes_its_own(monkeypatch):
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", "")  # so that the test's end restores it
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR")

    made = serve.metrics_directory()
    try:
        assert made is not None and os.path.isdir(made)
        assert os.environ["PROMETHEUS_MULTIPROC_DIR"] == made  # the workers inherit it
    finally:
        if made:
            os.rmdir(made)
