#!/bin/sh
# Compose's entry point for the proxy: the affinity cookie's secret, then the given command (compose.yaml passes the
# nginx image's own /docker-entrypoint.sh and its usual `nginx -g 'daemon off;'`).
#
# ATTNVIZ_AFFINITY_SECRET from the environment (or .env) is used as it is: cookies then stay valid when the proxy
# restarts, and several proxies in front of the same replicas can share it. Unset, a random one is made for this
# start; after a restart every browser is then given a new cookie, and with it possibly another replica, as when a
# replica is lost (its page rebuilds from the URL).
set -eu
if [ -z "${ATTNVIZ_AFFINITY_SECRET:-}" ]; then
    ATTNVIZ_AFFINITY_SECRET=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
fi
export ATTNVIZ_AFFINITY_SECRET
exec "$@"
