# The ahpd image: the server and Celery's worker and beat (docker-compose.yml runs all three).
# Only what the server needs at run time is installed (requirements.txt; the test and check
# tools are requirements-dev.txt's, and the tests are not copied in: .dockerignore).
FROM python:3.11-slim
# The settings `serve` keeps at its first start go beside its data, not into the image's /app.
# Sessions work in /workspace (a volume in docker-compose.yml): the one folder served.
ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 AHPD_DATA_DIR=/data AHPD_ENV_FILE=/data/settings.env \
    AHPD_PATHS=/workspace
WORKDIR /app

# git: a session's changesets are read and committed with git's own command line.
# bubblewrap: the sandbox each person's agents, commands and terminals run in (AHPD_SANDBOX);
# it needs user namespaces in the container (docker-compose.yml's security_opt for `web`).
RUN apt-get update && apt-get install -y --no-install-recommends git bubblewrap \
    && apt-get clean && rm -rf /var/lib/apt/lists/*

# An ACP agent to run: npm packages to install globally, with Node.js, e.g.
#   docker compose build --build-arg AHPD_EXTRA_NPM=@zed-industries/claude-agent-acp
# (docker-compose.yml passes it on from the environment). Empty: no Node.js in the image.
ARG AHPD_EXTRA_NPM=""
RUN if [ -n "$AHPD_EXTRA_NPM" ]; then \
        apt-get update && apt-get install -y --no-install-recommends nodejs npm \
        && npm install --global $AHPD_EXTRA_NPM \
        && npm cache clean --force && apt-get clean && rm -rf /var/lib/apt/lists/*; \
    fi

COPY requirements.txt .
RUN pip install -r requirements.txt
COPY . .
# The admin's and the API pages' static files, served by WhiteNoise from /app/staticfiles.
RUN DJANGO_SECRET_KEY=build AHPD_DATA_DIR=/tmp/build python manage.py collectstatic --noinput -v0 \
    && rm -rf /tmp/build

# The server runs as a user of its own, owning only its data and the workspace (a named
# volume mounted on either takes the directory's owner the first time).
RUN useradd --system --uid 10001 --home-dir /data --shell /usr/sbin/nologin ahpd \
    && mkdir -p /data /workspace && chown ahpd:ahpd /data /workspace && chmod 0700 /data
USER ahpd
EXPOSE 9187
HEALTHCHECK --interval=5s --timeout=4s --start-period=20s --retries=5 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:9187/healthz', timeout=3)"]
CMD ["sh", "-c", "python manage.py migrate --verbosity 0 && exec python manage.py serve"]
