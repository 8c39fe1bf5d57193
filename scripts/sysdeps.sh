#!/bin/sh
# Debian packages the app needs. Installs them when run as root with apt; otherwise lists what is missing.
set -eu
PKGS="redis-server postgresql docker-compose chromium espeak-ng flite ffmpeg poppler-utils fonts-noto-cjk fonts-noto-color-emoji bubblewrap libseccomp2 libpango-1.0-0 libpangoft2-1.0-0 fonts-dejavu-core fonts-dejavu-extra libreoffice-impress"
missing=""
for p in $PKGS; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian packages:$missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $missing >/dev/null
else
  echo "missing Debian packages:$missing" >&2
  echo "install them with: sudo apt-get install$missing" >&2
  exit 1
fi
