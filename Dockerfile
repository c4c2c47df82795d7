# syntax=docker/dockerfile:1
# The app's image, built once and run by every service of docker-compose.yml (app, scheduler,
# migrate). Two stages: the builder has the compiler and headers mysqlclient needs and turns
# every requirement into a wheel, and compiles the translations; the final image installs those
# wheels with no compiler and runs as an unprivileged user.

FROM python:3.11-slim-bookworm AS builder
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc pkg-config default-libmysqlclient-dev gettext \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY requirements.txt .
RUN pip wheel --no-cache-dir --wheel-dir /wheels -r requirements.txt
COPY locale/ locale/
RUN for po in locale/*/LC_MESSAGES/django.po; do msgfmt --check -o "${po%.po}.mo" "$po"; done

FROM python:3.11-slim-bookworm
# libmariadb3: the client library the mysqlclient wheel links against (no headers, no compiler).
RUN apt-get update \
    && apt-get install -y --no-install-recommends libmariadb3 \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --create-home --uid 10001 app
COPY --from=builder /wheels /wheels
RUN pip install --no-cache-dir --no-index --find-links=/wheels /wheels/* && rm -rf /wheels
WORKDIR /app
COPY --chown=app:app . .
COPY --from=builder --chown=app:app /src/locale/ locale/
# Static files (admin, API docs) are collected into the image and served by whitenoise. The key
# here only lets the local settings load for this one command; it is not in the final config.
RUN DJANGO_SETTINGS_MODULE=config.settings.local SECRET_KEY=collectstatic-only \
    python manage.py collectstatic --noinput -v0 \
    && rm -f var/db.sqlite3 && mkdir -p var/media && chown -R app:app var
USER app
# The probes (/healthz, /readyz, /livez) are answered on 8001 too, by threads of each
# worker's own that no request holds (ops/probe_listener.py): a load balancer probes there.
ENV DJANGO_SETTINGS_MODULE=config.settings.production \
    PYTHONUNBUFFERED=1 \
    PROBE_BIND=0.0.0.0:8001
EXPOSE 8000 8001
# Workers, threads and timeouts: config/serve.py (granian), what `make run` and the outage
# tests start too.
CMD ["python", "-m", "config.serve", "--bind", "0.0.0.0:8000"]
