#!/usr/bin/env bash
# Install what tests/report/test_browser.py needs (headless Chromium) on a fresh Debian machine.
# Idempotent and quiet: does nothing when Chromium is already there; prints one line when it installs.
# Elsewhere install Chromium yourself and point IBVERIFY_CHROMIUM at the binary.
set -euo pipefail

if [ -n "${IBVERIFY_CHROMIUM:-}" ] && [ -x "$IBVERIFY_CHROMIUM" ]; then exit 0; fi
if command -v chromium >/dev/null 2>&1; then exit 0; fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "browser-deps: no apt-get here; install Chromium and set IBVERIFY_CHROMIUM=/path/to/chromium" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
export DEBIAN_FRONTEND=noninteractive
if ! { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq chromium; } >"$log" 2>&1; then
  echo "browser-deps: installing chromium failed:" >&2
  tail -n 20 "$log" >&2
  exit 1
fi
echo "browser-deps: installed $(chromium --version 2>/dev/null || echo chromium)"
