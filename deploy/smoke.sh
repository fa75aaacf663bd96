#!/usr/bin/env bash
# Container smoke test: build the image, run it as production would (read-only root, non-root user), wait until
# Docker's HEALTHCHECK says healthy, then load pages: first a shared link on the cold container, then the home page.
# Also starts the image under a path prefix (/attnviz/) to check that its health check follows the prefix. Last, it
# starts one more cold container and prints the figures deploy/README.md quotes (bench/container.py): build time,
# image size, time to healthy, memory before the first visitor, time to the first chart, memory after.
# Needs a Docker engine; run it from anywhere:  bash deploy/smoke.sh
#
# Environment (all optional):
#   ATTNVIZ_IMAGE        tag to build and run (attnviz:smoke)
#   ATTNVIZ_SKIP_BUILD   1: run the existing ATTNVIZ_IMAGE without building it
#   ATTNVIZ_BUILD_ARGS   extra `docker build` arguments, split on spaces, e.g. to build from mirrors:
#                        "--build-arg BASE_IMAGE=... --build-arg PIP_INDEX_URL=... --no-cache" (deploy/README.md)
#   PYTHON               a Python with the dev requirements (`make test` installs them), used to open the link in
#                        Chromium and compare its charts with a local server's, and to time the first chart
#                        (~/.venvs/attnviz/bin/python); without Playwright only the HTTP checks run
set -euo pipefail
cd "$(dirname "$0")/.."

image="${ATTNVIZ_IMAGE:-attnviz:smoke}"
python="${PYTHON:-$HOME/.venvs/attnviz/bin/python}"
share_link="Self_attention?p=unit_sentences&b=1"
containers=()
container=""

say() { printf 'smoke: %s\n' "$*"; }
fail() {
    say "FAILED: $*"
    for name in "${containers[@]}"; do
        say "--- docker logs $name (tail) ---"
        docker logs --tail 40 "$name" 2>&1 || true
    done
    exit 1
}
cleanup() {
    for name in "${containers[@]}"; do docker rm -f "$name" >/dev/null 2>&1 || true; done
}
trap cleanup EXIT

# GET a URL on this machine; print the body, or fail.
http_get() {
    python3 - "$1" <<'EOF'
import sys
import urllib.request

opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
with opener.open(sys.argv[1], timeout=30) as response:
    sys.stdout.write(response.read().decode())
EOF
}

# Start the image in the background like a production replica; its name goes to $container (not printed: a
# command substitution would run this in a subshell, and cleanup would never learn the name).
run_container() {
    container="attnviz-smoke-$$-$1"
    shift
    containers+=("$container")
    docker run --detach --name "$container" --read-only --tmpfs /tmp --publish 127.0.0.1::8501 "$@" "$image" \
        >/dev/null
}

# Wait until Docker's own HEALTHCHECK reports the container healthy; print how long it took (also in $healthy_s).
healthy_s=0
wait_healthy() {
    local name="$1" start=$SECONDS status
    while true; do
        status="$(docker inspect --format '{{.State.Status}} {{.State.Health.Status}}' "$name")"
        case "$status" in
            "running healthy") break ;;
            running*) ;;
            *) fail "$name is $status" ;;
        esac
        [ $((SECONDS - start)) -lt 180 ] || fail "$name not healthy after 180 s ($status)"
        sleep 1
    done
    healthy_s=$((SECONDS - start))
    say "$name healthy after $healthy_s s"
}

host_port() { docker port "$1" 8501/tcp | head -n 1 | sed 's/.*://'; }

figures=()
if [ "${ATTNVIZ_SKIP_BUILD:-0}" != 1 ]; then
    read -r -a build_args <<<"${ATTNVIZ_BUILD_ARGS:-}"
    build_log="$(mktemp)"
    start=$SECONDS
    docker build "${build_args[@]}" --tag "$image" . 2>&1 | tee "$build_log"
    [ "${PIPESTATUS[0]}" = 0 ] || fail "docker build"
    build_s=$((SECONDS - start))
    # The classic builder prints "Step 3/25" and " ---> Using cache", BuildKit "#7 CACHED".
    steps="$(grep -c -E '^Step [0-9]+/[0-9]+ :|^#[0-9]+ \[' "$build_log" || true)"
    cached="$(grep -c -E '^ ---> Using cache|^#[0-9]+ CACHED' "$build_log" || true)"
    rm -f "$build_log"
    say "built $image in $build_s s ($cached of $steps steps from cache)"
    figures+=(--build-s "$build_s" --build-steps "$steps" --cached-steps "$cached" --build-args "${ATTNVIZ_BUILD_ARGS:-}")
fi
size="$(docker image inspect --format '{{.Size}}' "$image")"
say "image size: $((size / 1000000)) MB (target: under 1300 MB)"
[ "$size" -lt 1300000000 ] || fail "the image is larger than 1.3 GB"

# 1. The image as `docker run -p 8501:8501 attnviz` starts it.
run_container app
app="$container"
wait_healthy "$app"
url="http://127.0.0.1:$(host_port "$app")"
[ "$(docker exec "$app" id -u)" != 0 ] || fail "the app runs as root"
[ "$(http_get "$url/_stcore/health")" = ok ] || fail "/_stcore/health is not ok"
connects="$(http_get "$url/_stcore/metrics" | sed -n 's/^session_events_total{type="connect"} //p')"
[ "$connects" = 0 ] || fail "something ran the app before the first visitor (connects: $connects)"
http_get "$url/$share_link" | grep -q '<div id="root">' || fail "the share link does not serve the app's page"

if "$python" -c "import playwright" 2>/dev/null && [ -x /usr/bin/chromium ]; then
    say "opening the share link on the cold container in Chromium"
    ATTNVIZ_SMOKE_URL="$url" "$python" -m pytest -q -p no:cacheprovider \
        tests/browser/container_check.py || fail "browser check"
else
    say "no Playwright in $python or no /usr/bin/chromium: skipped the browser check (HTTP checks passed)"
fi

start=$SECONDS
docker stop "$app" >/dev/null
say "stopped in $((SECONDS - start)) s (SIGTERM handled)"
[ $((SECONDS - start)) -lt 10 ] || fail "the app ignored SIGTERM and was killed"

# 2. Under a path prefix: the HEALTHCHECK must follow it, the app must answer below it.
run_container prefix --env STREAMLIT_SERVER_BASE_URL_PATH=attnviz
prefixed="$container"
wait_healthy "$prefixed"
[ "$(http_get "http://127.0.0.1:$(host_port "$prefixed")/attnviz/_stcore/health")" = ok ] ||
    fail "/attnviz/_stcore/health is not ok"
docker rm -f "$prefixed" >/dev/null

# 3. The figures deploy/README.md quotes, on one more cold container (the ones above have been visited).
if "$python" -c "import playwright" 2>/dev/null && [ -x /usr/bin/chromium ]; then
    run_container figures
    wait_healthy "$container"
    say "figures (deploy/README.md quotes them; also in bench/results/<date>-container.md):"
    "$python" -m bench.container --container "$container" --url "http://127.0.0.1:$(host_port "$container")" \
        --size-bytes "$size" --healthy-s "$healthy_s" "${figures[@]}" || fail "figures"
else
    say "no Playwright in $python or no /usr/bin/chromium: no figures"
fi

say "passed"
