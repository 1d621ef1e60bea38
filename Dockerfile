# The production image: the wheel (no zeromem.devtools, no dev extra) with the pinned dependencies of
# pyproject.toml, the same versions `make test` installs; the admin's static files collected at build time and
# served by WhiteNoise from the WSGI app; a non-root user. `manage.py prove deployment` runs this file's
# collectstatic line and its ENV as the image does.

# --- build: the wheel only; the sources never reach the final image ---------------------------------------------
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY zeromem zeromem
COPY consolidation consolidation
COPY profiles profiles
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

# --- runtime: what web, worker, beat and migrate run ------------------------------------------------------------
FROM python:3.11-slim AS runtime
ENV PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 DJANGO_SETTINGS_MODULE=zeromem.settings ZEROMEMORY_STATIC_ROOT=/app/static
WORKDIR /app
COPY --from=build /wheels /tmp/wheels
RUN pip install --no-cache-dir /tmp/wheels/*.whl && rm -rf /tmp/wheels
COPY manage.py ./
# Settings need no database to load; a DATABASE_URL set (pointing nowhere) keeps manage.py from starting the
# embedded services, and collectstatic never connects.
RUN DATABASE_URL=postgresql://collectstatic@127.0.0.1:9/none REDIS_URL=redis://127.0.0.1:9/0 ZEROMEMORY_SECRET_KEY=build-time-collectstatic-only-not-a-secret python manage.py collectstatic --noinput
RUN useradd --create-home --uid 10001 --user-group zeromem
USER zeromem
EXPOSE 8000
CMD ["gunicorn", "zeromem.wsgi:application", "--bind", "0.0.0.0:8000"]

# --- flower: the optional dashboard (compose profile "flower"), pinned here and nowhere else -------------------
FROM runtime AS flower
USER root
RUN pip install --no-cache-dir flower==2.2.0
USER zeromem

# --- app: the default target ------------------------------------------------------------------------------------
FROM runtime AS app
