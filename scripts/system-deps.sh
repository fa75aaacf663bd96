#!/usr/bin/env bash
# System packages the tests need: Debian's Chromium (Playwright drives it; it cannot download its own
# browser offline), fonts, nginx and Redis. Installs only what is missing; needs root (or sudo) the first time.
set -euo pipefail
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
# Debian's nginx: the proxy tests run it as the current user on 127.0.0.1 (testkit/nginx.py), with its
# JavaScript module (njs), which issues and checks the affinity cookie, and openssl for a test certificate.
[ -x /usr/sbin/nginx ] || missing+=(nginx)
[ -e /usr/lib/nginx/modules/ngx_http_js_module.so ] || missing+=(libnginx-mod-http-js)
command -v openssl >/dev/null || missing+=(openssl)
# Debian's redis-server: the class store's tests run it as the current user on 127.0.0.1 (testkit/redis_server.py).
[ -x /usr/bin/redis-server ] || missing+=(redis-server)
# iproute2: the image-build tests serve a package index from a network namespace of their own (a LAN mirror).
command -v ip >/dev/null || missing+=(iproute2)
# Fonts for CJK tokens and emoji, so screenshots show what a student's browser shows.
for pkg in fonts-noto-cjk fonts-noto-color-emoji; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
echo "Installing system packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Installing nginx or redis-server must not start a system-wide service (nginx on port 80, Redis on 6379): where no
# policy-rc.d says otherwise, refuse service starts for the duration of the install.
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
  $SUDO chmod 755 /usr/sbin/policy-rc.d
  trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
fi
# Another apt or dpkg (an unattended upgrade, a second terminal) may hold the lock: wait for it, for a bounded time.
APT=(apt-get -o DPkg::Lock::Timeout=300)
$SUDO "${APT[@]}" update -qq
$SUDO "${APT[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
