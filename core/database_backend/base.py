"""Django's MySQL backend, but a kept connection is checked without a round trip
(docs/decisions/1012-connection-checks-without-a-ping.md).

Django's CONN_HEALTH_CHECKS pings a kept connection before the first statement of every
request: one database round trip per request, on a win a second one beside the claim's
CALL. Here the first statement of a request checks instead:

- always, the socket, with no round trip: a server that closed the connection (killed,
  restarted, a failover through HAProxy, an idle timeout) has left an end-of-file or an error
  packet that no statement asked for, so an unasked-for readable socket is a dead connection;
- and with a ping only when the connection sat unused longer than CONNECTION_IDLE_CHECK
  seconds, for a peer that vanished without closing (a network cut): rare during a sale,
  when every connection is busy.

A dead connection is closed and replaced before anything is sent on it, which is the one
point where trying again is safe. A statement whose connection dies after it was sent is not
retried here: its outcome is unknown, so it fails (503 `unavailable`) and the client's
Idempotency-Key finds whatever committed (SPEC section 24)."""

import select
import time

import MySQLdb
from django.conf import settings
from django.db.backends.mysql import base as mysql

UNASKED_FOR = select.POLLIN | select.POLLPRI | select.POLLERR | select.POLLHUP | select.POLLNVAL


def closed_by_peer(fileno: int) -> bool:
    """Whether the connection's socket holds something no statement asked for (the server's
    end-of-file or error packet), or is broken: checked without waiting."""
    poller = select.poll()
    poller.register(fileno, UNASKED_FOR)
    return bool(poller.poll(0))


class DatabaseWrapper(mysql.DatabaseWrapper):
    used_at = 0.0  # time.monotonic() of the connection's last cursor

    def create_cursor(self, name=None):
        self.used_at = time.monotonic()
        return super().create_cursor(name)

    def get_new_connection(self, conn_params):
        self.used_at = time.monotonic()
        return super().get_new_connection(conn_params)

    def close_if_health_check_failed(self) -> None:
        """Django's hook before a request's first statement: close a dead connection so
        that the statement opens a new one."""
        checks = self.health_check_enabled  # type: ignore[attr-defined]  # Django 4.1+, not in the stubs
        if self.connection is None or not checks or self.health_check_done:  # type: ignore[has-type]
            return
        if not self.connection_alive():
            self.close()
        self.health_check_done = True

    def connection_alive(self) -> bool:
        try:
            if closed_by_peer(self.connection.fileno()):
                return False
        except (OSError, ValueError, MySQLdb.Error):
            return False  # no socket left to ask
        if time.monotonic() - self.used_at > settings.DATABASE_CONNECTION_IDLE_CHECK:
            return self.is_usable()  # the ping
        return True
