#!/usr/bin/env bash
# Headless Chromium and its driver for the browser test (tests/book/test_browser.py), from Debian.
set -euo pipefail
if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
  exit 0
fi
if [ "$(id -u)" = 0 ]; then
  sudo=""
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  sudo="sudo -n"
else
  echo "The browser test needs Chromium: apt-get install chromium chromium-driver (as root), then rerun." >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq chromium chromium-driver >/dev/null
chromium --version
