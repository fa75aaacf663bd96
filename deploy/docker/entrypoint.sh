#!/bin/sh
# Container entry point: give every replica the same cookie secret, then run the app (extra arguments are passed
# to `streamlit run`, e.g. --server.baseUrlPath attnviz).
#
# The secret comes from STREAMLIT_SERVER_COOKIE_SECRET, else ATTNVIZ_COOKIE_SECRET, else the file named by
# ATTNVIZ_COOKIE_SECRET_FILE (on a volume the replicas share), which the first replica to start creates with a
# random value. Without any of them Streamlit makes up its own secret, different on each replica.
set -eu

if [ -z "${STREAMLIT_SERVER_COOKIE_SECRET:-}" ]; then
    secret="${ATTNVIZ_COOKIE_SECRET:-}"
    file="${ATTNVIZ_COOKIE_SECRET_FILE:-}"
    if [ -z "$secret" ] && [ -n "$file" ]; then
        if [ ! -s "$file" ]; then
            # link(2) is atomic and refuses to overwrite: replicas starting together all end up reading one winner.
            tmp="$file.$$"
            python3 -c 'import secrets; print(secrets.token_hex(32))' >"$tmp"
            ln "$tmp" "$file" 2>/dev/null || true
            rm -f "$tmp"
        fi
        secret="$(cat "$file")"
    fi
    if [ -n "$secret" ]; then
        export STREAMLIT_SERVER_COOKIE_SECRET="$secret"
    fi
fi

# attnviz.app.server is `streamlit run` with the patches of attnviz/app/streamlit_patches (TCP_NODELAY, ...).
exec python3 -m attnviz.app.server app.py "$@"
