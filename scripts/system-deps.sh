#!/usr/bin/env bash
# System packages the browser tests need: Debian's Chromium (Playwright drives it; it cannot download
# its own browser offline) and fonts. Installs only what is missing; needs root (or sudo) the first time.
set -euo pipefail
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
# Fonts for CJK tokens and emoji, so screenshots show what a student's browser shows.
for pkg in fonts-noto-cjk fonts-noto-color-emoji; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
echo "Installing system packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
