"""A process known by its record (localservers/processes.py): its pid and start time, so that
an empty or half-written file means "look again", a pid reused by another process is not
taken for it, and no signal reaches a process it does not name."""

import os
import signal
import subprocess
import threading
import time

from localservers.processes import ProcessRecord, record_alive


def sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sleep", "30"], start_new_session=True)


def test_a_running_process_is_alive_and_a_killed_one_is_dead_even_before_it_is_reaped():
    child = sleeper()
    record = ProcessRecord.of(child.pid)
    assert record is not None and record.alive()

    os.kill(child.pid, signal.SIGKILL)
    time.sleep(0.1)  # a zombie now: killed, not yet reaped

    assert not record.alive()
    child.wait()
    assert not record.alive()


def test_the_same_pid_with_another_start_time_is_another_process_and_gets_no_signal():
    child = sleeper()
    try:
        record = ProcessRecord.of(child.pid)
        assert record is not None
        someone_else = ProcessRecord(child.pid, record.started - 1)  # as after pids wrapped

        assert not someone_else.alive()
        assert not someone_else.send(signal.SIGKILL)
        assert child.poll() is None  # untouched
        assert record.send(signal.SIGKILL, group=True)
        assert child.wait(timeout=5) == -signal.SIGKILL
    finally:
        child.kill()
        child.wait()


def test_a_record_is_read_back_and_a_missing_file_is_no_process(tmp_path):
    child = sleeper()
    try:
        record = ProcessRecord.of(child.pid)
        assert record is not None
        record.save(tmp_path / "sleep.process")

        assert ProcessRecord.load(tmp_path / "sleep.process") == record
        assert ProcessRecord.load(tmp_path / "nothing.process") is None
        assert not record_alive(None)
    finally:
        child.kill()
        child.wait()


def test_an_empty_file_is_read_again_until_it_is_written(tmp_path):
    """What a reader met in mariadbd's own pid file (emptied, then rewritten): not "dead"."""
    child = sleeper()
    try:
        record = ProcessRecord.of(child.pid)
        assert record is not None
        path = tmp_path / "node.process"
        path.write_text("")
        writer = threading.Timer(0.1, lambda: path.write_text(f"{record.pid} {record.started}\n"))
        writer.start()

        assert ProcessRecord.load(path, patience=2) == record
        writer.join()
    finally:
        child.kill()
        child.wait()


def test_a_file_that_never_parses_counts_as_none_after_the_patience(tmp_path):
    path = tmp_path / "node.process"
    path.write_text("12")
    started = time.monotonic()

    assert ProcessRecord.load(path, patience=0.2) is None
    assert time.monotonic() - started >= 0.2


def test_a_reader_never_sees_a_record_half_written(tmp_path):
    """save() renames a whole file into place: read in a tight loop, always whole."""
    path = tmp_path / "node.process"
    ProcessRecord(os.getpid(), 1).save(path)
    stop = threading.Event()
    torn = []

    def read() -> None:
        while not stop.is_set():
            if len(path.read_text().split()) != 2:
                torn.append(path.read_text())

    reader = threading.Thread(target=read)
    reader.start()
    for started in range(2000):
        ProcessRecord(os.getpid(), started).save(path)
    stop.set()
    reader.join()
    assert torn == []
