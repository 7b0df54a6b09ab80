#!/usr/bin/env bash
# The dashboard's browser test needs Debian's chromium and its chromedriver (browsers cannot be
# downloaded by Selenium here; the Debian packages can). Installs them when missing.
set -euo pipefail
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
    exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq chromium chromium-driver >/dev/null
command -v chromium && command -v chromedriver
