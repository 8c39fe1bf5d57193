# The app image (`app`): web (daphne), the agent workers and beat run from it.
# The render image (`render`, built on `app`): the render workers, with LibreOffice for the slide thumbnails.
# The base image is pinned to an exact Python and Debian release; rebuild to take security updates.
FROM python:3.11.7-slim-bookworm AS app
ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 DJANGO_SETTINGS_MODULE=research.settings
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      espeak-ng flite ffmpeg poppler-utils fonts-noto-cjk fonts-noto-color-emoji fonts-dejavu-core fonts-dejavu-extra bubblewrap \
      libseccomp2 libpango-1.0-0 libpangoft2-1.0-0 util-linux \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY requirements.txt constraints.txt ./
RUN pip install -r requirements.txt -c constraints.txt
COPY . .
RUN SECRET_KEY=build REDIS_URL=redis://redis:6379/0 python manage.py collectstatic --noinput -v0
RUN useradd --create-home --uid 10001 app && mkdir -p /app/outputs /app/.run && chown -R app /app/outputs /app/.run
USER app
EXPOSE 8000
CMD ["daphne", "-b", "0.0.0.0", "-p", "8000", "research.asgi:application"]

# Render workers: LibreOffice Impress (headless) turns each deck into PNG slide thumbnails
# (research/render/preview.py). Without it the job page shows slide titles instead.
FROM app AS render
USER root
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      libreoffice-impress-nogui \
    && rm -rf /var/lib/apt/lists/* \
    && soffice --version
USER app
