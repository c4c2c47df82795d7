"""Servers this machine starts for the tests, the bench, the drills and `make cluster`: free
ports, a child process stopped with its whole group, a redis-server and a mariadbd of their
own, and a 3-node Galera cluster behind HAProxy (`localservers.galera`). The shared
development MariaDB and Redis are never started, stopped or slowed from here."""
