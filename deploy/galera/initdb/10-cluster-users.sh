#!/bin/bash
# Run once by the MariaDB image's entrypoint, on the bootstrap node's first start (the other
# nodes receive these accounts with their first full copy, SST):
# - mysql@localhost through unix_socket: mariabackup's account when this node is an SST
#   donor (wsrep_sst_auth = mysql: in galera.cnf), no password to keep;
# - haproxy from HAProxy's fixed address only, no password and no privileges: enough for
#   SHOW GLOBAL STATUS, which is all scripts/galera-check asks.
docker_process_sql <<SQL
CREATE USER IF NOT EXISTS 'mysql'@'localhost' IDENTIFIED VIA unix_socket;
GRANT RELOAD, PROCESS, LOCK TABLES, BINLOG MONITOR ON *.* TO 'mysql'@'localhost';
CREATE USER IF NOT EXISTS 'haproxy'@'172.30.87.20';
SQL
