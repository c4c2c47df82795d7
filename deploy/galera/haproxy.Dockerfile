# HAProxy with the wsrep-aware check (scripts/galera-check) and the MariaDB client it runs.
# Built from the repository's root: docker-compose.cluster.yml names this file.
FROM haproxy:2.6
USER root
RUN apt-get update \
    && apt-get install -y --no-install-recommends mariadb-client \
    && rm -rf /var/lib/apt/lists/*
COPY scripts/galera-check /usr/local/bin/galera-check
COPY deploy/galera/haproxy.cfg /usr/local/etc/haproxy/haproxy.cfg
USER haproxy
