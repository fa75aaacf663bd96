"""The deployment files, checked without Docker or a cluster: nginx -t, the container scripts, and that the
Dockerfile, compose.yaml, the nginx configuration and the Kubernetes manifests agree with one another.

(hadolint on the Dockerfile, kubernetes-validate on the manifests and shellcheck on the scripts run in `make test`.)
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import Iterator
from fnmatch import fnmatch
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from attnviz.app.classroom.redis_store import RedisStore
from attnviz.app.classroom.store import open_store
from attnviz.app.links import STATE_FILE_MAX_BYTES
from testkit.nginx import JS_MODULE, REPO_ROOT, SITE_CONF, NginxProxy, nginx_binary, user_directive

DEPLOY = REPO_ROOT / "deploy"
ENTRYPOINT = DEPLOY / "docker" / "entrypoint.sh"
HEALTHCHECK = DEPLOY / "docker" / "healthcheck.py"
APP_PORT = 8501


def load_yaml(path: Path) -> list[dict[str, Any]]:
    """Every document of a YAML file."""
    return [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc]


REDIS_MANIFEST = DEPLOY / "k8s" / "redis.yaml"


def manifests() -> dict[str, dict[str, Any]]:
    """The app's manifests in deploy/k8s/*.yaml by kind (the live class's Redis, in redis.yaml, apart)."""
    paths = sorted(path for path in (DEPLOY / "k8s").glob("*.yaml") if path != REDIS_MANIFEST)
    found = {doc["kind"]: doc for path in paths for doc in load_yaml(path)}
    assert set(found) >= {"Deployment", "Service", "Ingress", "HorizontalPodAutoscaler"}, sorted(found)
    return found


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", (REPO_ROOT / "Dockerfile").read_text(encoding="utf-8"))
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1] if " " in line else "") for line in lines]


# ----- nginx ---------------------------------------------------------------------------------------------------


def test_nginx_accepts_the_config(tmp_path: Path) -> None:
    """`nginx -t` on deploy/nginx/attnviz.conf, with two loopback replicas as the tests run it."""
    result = NginxProxy(["127.0.0.1:9", "127.0.0.1:10"], 8080, tmp_path).check()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "test is successful" in result.stderr


def test_compose_serves_the_same_nginx_config() -> None:
    """compose.yaml mounts the tested site file and the include folder it expects; replicas share the secret."""
    compose = load_yaml(REPO_ROOT / "compose.yaml")[0]
    app, proxy = compose["services"]["app"], compose["services"]["proxy"]
    site = (DEPLOY / "nginx" / "attnviz.conf").read_text(encoding="utf-8")
    mounts = dict(volume.rsplit(":", 1)[0].split(":", 1) for volume in proxy["volumes"])
    assert mounts == {
        "./deploy/nginx/compose/nginx.conf": "/etc/nginx/nginx.conf",
        "./deploy/nginx/attnviz.conf": "/etc/nginx/conf.d/default.conf",
        "./deploy/nginx/compose": "/etc/nginx/attnviz",
    }
    # start.sh (in the mounted folder) makes the affinity secret, then runs the image's own entry point and command.
    assert proxy["entrypoint"] == ["/bin/sh", "/etc/nginx/attnviz/start.sh", "/docker-entrypoint.sh"]
    assert proxy["command"] == ["nginx", "-g", "daemon off;"]
    assert proxy["environment"] == {"ATTNVIZ_AFFINITY_SECRET": "${ATTNVIZ_AFFINITY_SECRET:-}"}
    assert re.search(r"^\s*js_import \w+ from attnviz/affinity\.js;", site, re.MULTILINE)
    assert (DEPLOY / "nginx" / "compose" / "affinity.js").is_file()
    for include in re.findall(r"^\s*include (attnviz/\S+);", site, re.MULTILINE):
        assert (DEPLOY / "nginx" / "compose" / include.removeprefix("attnviz/")).is_file(), include
    upstream = (DEPLOY / "nginx" / "compose" / "upstream.conf").read_text(encoding="utf-8")
    assert re.search(rf"^server app:{APP_PORT}\b", upstream, re.MULTILINE), upstream
    assert proxy["ports"] == [f"${{ATTNVIZ_PORT:-{APP_PORT}}}:{APP_PORT}"]
    assert proxy["depends_on"]["app"]["condition"] == "service_healthy"
    # One secret for every replica: from the environment, else one generated file on a shared volume.
    secret_file = app["environment"]["ATTNVIZ_COOKIE_SECRET_FILE"]
    volume, mount = app["volumes"][0].split(":")
    assert volume in compose["volumes"] and PurePosixPath(secret_file).parent == PurePosixPath(mount)
    assert app["environment"]["STREAMLIT_SERVER_BASE_URL_PATH"] == "${ATTNVIZ_BASE_PATH:-}"


def test_compose_main_nginx_conf_loads_the_site(tmp_path: Path) -> None:
    """`nginx -t` on Compose's main nginx.conf as the proxy container reads it: the JavaScript module, the secret's
    `env`, and conf.d/*.conf with the site file and the mounted folder (the image's paths moved to a temporary
    prefix, the replicas' name to a loopback address, since nginx -t resolves it)."""
    compose_dir = DEPLOY / "nginx" / "compose"
    main = (compose_dir / "nginx.conf").read_text(encoding="utf-8")
    assert re.search(r"^load_module modules/ngx_http_js_module\.so;$", main, re.MULTILINE)
    assert re.search(r"^env ATTNVIZ_AFFINITY_SECRET;$", main, re.MULTILINE)
    etc = tmp_path / "etc"
    shutil.copytree(compose_dir, etc / "attnviz")
    (etc / "conf.d").mkdir()
    shutil.copyfile(DEPLOY / "nginx" / "attnviz.conf", etc / "conf.d" / "default.conf")
    shutil.copyfile("/etc/nginx/mime.types", etc / "mime.types")
    upstream = etc / "attnviz" / "upstream.conf"
    upstream.write_text(upstream.read_text(encoding="utf-8").replace("server app:", "server 127.0.0.1:"))
    (tmp_path / "logs").mkdir()
    moved = {
        "modules/ngx_http_js_module.so": str(JS_MODULE),
        "/etc/nginx/": f"{etc}/",
        "/var/log/nginx/": f"{tmp_path}/logs/",
        "/var/run/nginx.pid": f"{tmp_path}/nginx.pid",
        "user  nginx;": user_directive().strip(),
    }
    for image_path, here in moved.items():
        assert image_path in main, image_path
        main = main.replace(image_path, here)
    (etc / "nginx.conf").write_text(main, encoding="utf-8")
    result = subprocess.run(
        [nginx_binary(), "-t", "-p", f"{tmp_path}/", "-c", str(etc / "nginx.conf"), "-e", f"{tmp_path}/logs/e.log"],
        env={**os.environ, "ATTNVIZ_AFFINITY_SECRET": "x" * 64},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 0 and "test is successful" in result.stderr, result.stderr


def run_start_script(**env: str) -> str:
    """Compose's proxy entry point with `env` as its environment, running `printenv` in place of nginx: the
    affinity secret nginx would see."""
    script = DEPLOY / "nginx" / "compose" / "start.sh"
    result = subprocess.run(
        ["/bin/sh", str(script), "printenv", "ATTNVIZ_AFFINITY_SECRET"],
        env={"PATH": os.environ["PATH"], **env},
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return result.stdout.strip()


def test_compose_proxy_start_script_makes_or_keeps_the_affinity_secret() -> None:
    """Unset (or empty, as compose.yaml passes an unset one): a fresh random 64-hex secret each start; set: kept."""
    first, second = run_start_script(), run_start_script(ATTNVIZ_AFFINITY_SECRET="")
    assert re.fullmatch(r"[0-9a-f]{64}", first) and re.fullmatch(r"[0-9a-f]{64}", second) and first != second
    chosen = "s" * 40
    assert run_start_script(ATTNVIZ_AFFINITY_SECRET=chosen) == chosen


# ----- Dockerfile and .dockerignore ----------------------------------------------------------------------------


def test_dockerfile_production_settings() -> None:
    """Non-root numeric user, /app, port 8501, the health check script, and Streamlit's production settings."""
    instructions = dockerfile_instructions()
    values = {name: args for name, args in instructions}  # the last of each, i.e. the runtime stage's
    env = dict(re.findall(r"(\w+)=(\S+)", " ".join(args for name, args in instructions if name == "ENV")))
    args = " ".join(args for name, args in instructions if name == "ARG")
    assert values["USER"] == "${APP_UID}:${APP_UID}" and "APP_UID=10001" in args
    assert values["WORKDIR"] == "/app" and values["EXPOSE"] == str(APP_PORT)
    assert "/app/deploy/docker/healthcheck.py" in values["HEALTHCHECK"]
    assert env["STREAMLIT_SERVER_HEADLESS"] == "true"
    assert env["STREAMLIT_SERVER_FILE_WATCHER_TYPE"] == "none"
    assert env["STREAMLIT_SERVER_ENABLE_XSRF_PROTECTION"] == "true"
    assert env["STREAMLIT_CLIENT_SHOW_ERROR_DETAILS"] == "none"
    assert env["STREAMLIT_BROWSER_GATHER_USAGE_STATS"] == "false"
    assert env["STREAMLIT_SERVER_PORT"] == str(APP_PORT)
    assert "BASE_IMAGE=python:3.11-slim" in args and "TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu" in args


def dockerignored(path: str) -> bool:
    """Whether .dockerignore keeps `path` out of the build context (Docker's rules: the last matching pattern
    wins, a pattern matching a parent folder matches its files; fnmatch stands in for Go's filepath.Match)."""
    patterns = [
        line.strip()
        for line in (REPO_ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    parts = PurePosixPath(path).parts
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    excluded = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        pattern = pattern.removeprefix("!").rstrip("/")
        if any(fnmatch(prefix, pattern) for prefix in prefixes):
            excluded = not negated
    return excluded


@pytest.mark.parametrize(
    "path",
    [
        "app.py",
        "app_pages/self_attention.py",
        "attnviz/__init__.py",
        "attnviz/app/ui/common.py",
        "requirements.txt",
        ".streamlit/config.toml",
        "deploy/docker/entrypoint.sh",
        "deploy/docker/healthcheck.py",
    ],
)
def test_dockerignore_lets_in_the_app(path: str) -> None:
    """What the image runs is in the build context."""
    assert not dockerignored(path)


@pytest.mark.parametrize(
    "path",
    [
        "tests/test_app.py",
        "testkit/server.py",
        ".venv/bin/python",
        "venv/lib/site.py",
        "bench/run.py",
        ".git/HEAD",
        ".streamlit/secrets.toml",
        "attnviz/__pycache__/state.cpython-311.pyc",
        ".pytest_cache/v/cache/nodeids",
        ".hypothesis/examples/x",
        "test-artifacts/logs/x.log",
        "deploy/smoke.sh",
        "Dockerfile",
    ],
)
def test_dockerignore_keeps_out_the_rest(path: str) -> None:
    """Tests, caches, virtualenvs, git metadata and local secrets stay out of the image."""
    assert dockerignored(path)


def test_dockerignore_admits_every_python_file_the_app_imports() -> None:
    """Every file of app.py, app_pages/ and attnviz/ in the repository reaches the image."""
    files = [REPO_ROOT / "app.py", *(REPO_ROOT / "app_pages").rglob("*.py"), *(REPO_ROOT / "attnviz").rglob("*.py")]
    assert [f for f in files if dockerignored(f.relative_to(REPO_ROOT).as_posix())] == []


def runtime_stage() -> list[tuple[str, str]]:
    """The Dockerfile's instructions after its last FROM: what the image is made of."""
    instructions = dockerfile_instructions()
    last = max(i for i, (name, _) in enumerate(instructions) if name == "FROM")
    return instructions[last + 1 :]


def test_the_runtime_stage_copies_the_app_and_nothing_from_deploy_pip() -> None:
    """Every file of app.py, app_pages/, attnviz/ and the container scripts is under a COPY of the runtime stage, and no
    COPY of it takes deploy/pip/ (a school's certificates and wheel folder) or the whole context."""
    sources = [args.split()[:-1] for name, args in runtime_stage() if name == "COPY" and not args.startswith("--from")]
    copied = [source.rstrip("/") for group in sources for source in group]
    assert "." not in copied and not [s for s in copied if s.startswith("deploy/pip") or s == "deploy"], copied
    files = [
        REPO_ROOT / "app.py",
        REPO_ROOT / ".streamlit" / "config.toml",
        *(REPO_ROOT / "app_pages").rglob("*.py"),
        *(REPO_ROOT / "attnviz").rglob("*.py"),
        *(REPO_ROOT / "attnviz").rglob("*.po"),
        *(DEPLOY / "docker").iterdir(),
    ]
    missing = [
        path.relative_to(REPO_ROOT).as_posix()
        for path in files
        if "__pycache__" not in path.parts
        and not any(path.relative_to(REPO_ROOT).as_posix().startswith(source) for source in copied)
    ]
    assert missing == []


def test_the_build_stages_read_deploy_pip_through_pip_sh() -> None:
    """Both stages that run pip copy deploy/pip/ and pip.sh, and every pip install in them goes through pip.sh."""
    text = re.sub(r"\\\n", " ", (REPO_ROOT / "Dockerfile").read_text(encoding="utf-8"))
    stages = re.split(r"^FROM ", text, flags=re.MULTILINE)[1:]
    installing = [stage for stage in stages if "pip install" in stage]
    assert len(installing) == 2, "the build and catalogues stages"
    for stage in installing:
        assert "COPY deploy/pip/ /tmp/pip/" in stage and "COPY deploy/docker/pip.sh /tmp/pip.sh" in stage
        for install in re.findall(r"[^&]*pip install[^&]*", stage):
            assert "sh /tmp/pip.sh /tmp/pip " in install, install
        for arg in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_TRUSTED_HOST"):
            assert re.search(rf"^ARG {arg}=", stage, re.MULTILINE), arg
    # torch alone from the CPU index: --no-deps, and the extra indexes are not asked for it.
    torch = next(i for i in re.findall(r"&&[^&]*pip install[^&]*", text) if "TORCH_INDEX_URL" in i)
    assert "--no-deps" in torch and "PIP_EXTRA_INDEX_URL=''" in torch
    assert "pip check" in text


def test_compose_passes_every_build_argument_through() -> None:
    """Each build argument of the Dockerfile (but the runtime user's id) can be set from compose's environment, and
    so can the build's network."""
    build = load_yaml(REPO_ROOT / "compose.yaml")[0]["services"]["app"]["build"]
    arguments = {
        args.split("=", 1)[0] for name, args in dockerfile_instructions() if name == "ARG" and "APP_UID" not in args
    }
    assert arguments == {"BASE_IMAGE", "TORCH_INDEX_URL", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_TRUSTED_HOST"}
    assert set(build["args"]) == arguments
    for argument in arguments:
        assert build["args"][argument].startswith(f"${{ATTNVIZ_{argument}:-"), build["args"][argument]
    assert build["network"] == "${ATTNVIZ_BUILD_NETWORK:-default}"


@pytest.mark.parametrize("path", ["deploy/pip/school-proxy.crt", "deploy/pip/ca.pem", "deploy/pip/wheels/a.whl"])
def test_deploy_pip_reaches_the_build_but_never_git(path: str) -> None:
    """A school's certificates and wheels are in the build context and ignored by git (not committed by mistake);
    the folder's README is tracked."""
    assert not dockerignored(path)
    ignored = subprocess.run(["git", "check-ignore", "-q", path], cwd=REPO_ROOT, check=False)
    assert ignored.returncode == 0, f"git would commit {path}"
    readme = subprocess.run(["git", "check-ignore", "-q", "deploy/pip/README.md"], cwd=REPO_ROOT, check=False)
    assert readme.returncode == 1


# ----- container scripts ---------------------------------------------------------------------------------------


def run_entrypoint(tmp_path: Path, **env: str) -> dict[str, str]:
    """Run deploy/docker/entrypoint.sh with a stand-in `python3` that reports the app's start command and cookie
    secret (and runs the real Python for anything else, such as generating the secret)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    fake = bin_dir / "python3"
    report = 'echo "args=$*"; echo "secret=${STREAMLIT_SERVER_COOKIE_SECRET:-}"'
    fake.write_text(f'#!/bin/sh\nif [ "$1" = "-m" ]; then {report}; else exec "{sys.executable}" "$@"; fi\n')
    fake.chmod(0o755)
    python_dir = str(Path(sys.executable).parent)
    clean = {k: v for k, v in os.environ.items() if "COOKIE_SECRET" not in k}
    result = subprocess.run(
        [str(ENTRYPOINT), "--server.baseUrlPath", "attnviz"],
        env={**clean, "PATH": f"{bin_dir}:{python_dir}:{os.environ['PATH']}", **env},
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return dict(line.split("=", 1) for line in result.stdout.splitlines())


def test_entrypoint_shares_one_cookie_secret(tmp_path: Path) -> None:
    """Replicas sharing a secret file get one generated secret; an explicit secret wins; arguments pass through."""
    secret_file = str(tmp_path / "cookie_secret")
    first = run_entrypoint(tmp_path, ATTNVIZ_COOKIE_SECRET_FILE=secret_file)
    second = run_entrypoint(tmp_path, ATTNVIZ_COOKIE_SECRET_FILE=secret_file)
    assert re.fullmatch(r"[0-9a-f]{64}", first["secret"]) and second["secret"] == first["secret"]
    assert first["args"] == "-m attnviz.app.server app.py --server.baseUrlPath attnviz"
    chosen = run_entrypoint(tmp_path, ATTNVIZ_COOKIE_SECRET="from-env", ATTNVIZ_COOKIE_SECRET_FILE=secret_file)
    assert chosen["secret"] == "from-env"
    direct = run_entrypoint(tmp_path, STREAMLIT_SERVER_COOKIE_SECRET="streamlit", ATTNVIZ_COOKIE_SECRET="x")
    assert direct["secret"] == "streamlit"
    assert run_entrypoint(tmp_path)["secret"] == "", "without any setting Streamlit should pick its own"


class _Health(BaseHTTPRequestHandler):
    """Answers "ok" on /attnviz/_stcore/health only, like Streamlit with baseUrlPath=attnviz."""

    def do_GET(self) -> None:
        ok = self.path == "/attnviz/_stcore/health"
        self.send_response(200 if ok else 404)
        self.end_headers()
        self.wfile.write(b"ok" if ok else b"not here")

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""


@pytest.fixture
def health_server() -> Iterator[int]:
    """A loopback HTTP server standing in for Streamlit's health endpoint; yields its port."""
    httpd = HTTPServer(("127.0.0.1", 0), _Health)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


def test_healthcheck_follows_port_and_base_path(health_server: int) -> None:
    """The HEALTHCHECK script asks <base path>/_stcore/health on Streamlit's port and exits 0 only on "ok"."""

    def check(**env: str) -> int:
        clean = {k: v for k, v in os.environ.items() if not k.startswith("STREAMLIT_SERVER_")}
        return subprocess.run([sys.executable, str(HEALTHCHECK)], env={**clean, **env}, timeout=30).returncode

    port = str(health_server)
    assert check(STREAMLIT_SERVER_PORT=port, STREAMLIT_SERVER_BASE_URL_PATH="/attnviz/") == 0
    assert check(STREAMLIT_SERVER_PORT=port) == 1  # the wrong path: 404
    assert check(STREAMLIT_SERVER_PORT="9", STREAMLIT_SERVER_BASE_URL_PATH="attnviz") == 1  # nothing listens


# ----- Kubernetes ----------------------------------------------------------------------------------------------


def test_k8s_manifests_agree() -> None:
    """Ports, names, probes, user and affinity line up across Deployment, Service, Ingress, HPA and Dockerfile."""
    k8s = manifests()
    deployment, service, ingress, hpa = (
        k8s[kind] for kind in ("Deployment", "Service", "Ingress", "HorizontalPodAutoscaler")
    )
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"] == labels == service["spec"]["selector"]
    assert container["ports"] == [{"name": "http", "containerPort": APP_PORT}]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"] == {"path": "/_stcore/health", "port": "http"}, probe
    assert set(container["resources"]) == {"requests", "limits"}
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] == 10001
    assert service["spec"]["ports"][0]["targetPort"] == "http"
    backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend == {"name": service["metadata"]["name"], "port": {"name": service["spec"]["ports"][0]["name"]}}
    annotations = ingress["metadata"]["annotations"]
    assert annotations["nginx.ingress.kubernetes.io/affinity"] == "cookie"
    assert int(annotations["nginx.ingress.kubernetes.io/proxy-read-timeout"]) >= 3600
    target = hpa["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", deployment["metadata"]["name"])
    secret = next(e for e in container["env"] if e["name"] == "ATTNVIZ_COOKIE_SECRET")
    assert secret["valueFrom"]["secretKeyRef"]["name"] == "attnviz-cookie-secret"


def redis_options(command: list[str]) -> dict[str, str]:
    """`redis-server --name value ...` as {name: value}."""
    assert command[0] == "redis-server"
    names, values = command[1::2], command[2::2]
    assert all(name.startswith("--") for name in names) and len(names) == len(values)
    return {name.removeprefix("--"): value for name, value in zip(names, values, strict=True)}


def assert_persistent_store(options: dict[str, str]) -> None:
    """Redis as the class store needs it: an append-only file flushed at each write (a restart or a crash loses no
    answer), no snapshots, and no key dropped when memory is full."""
    assert (options["appendonly"], options["appendfsync"], options["save"]) == ("yes", "always", "")
    assert options["maxmemory-policy"] == "noeviction"


def test_compose_gives_every_replica_one_persistent_redis() -> None:
    """The replicas' class store is the redis service, unpublished; its data is on a volume of its own."""
    compose = load_yaml(REPO_ROOT / "compose.yaml")[0]
    app, redis = compose["services"]["app"], compose["services"]["redis"]
    default = re.fullmatch(r"\$\{ATTNVIZ_CLASS_STORE:-(.+)\}", app["environment"]["ATTNVIZ_CLASS_STORE"])
    url = urlsplit(default.group(1))
    assert (url.scheme, url.hostname, url.port) == ("redis", "redis", 6379) and str(url.port) in redis["expose"]
    assert isinstance(open_store(default.group(1)), RedisStore)  # a URL the app reads (it connects on first use)
    options = redis_options(redis["command"])
    assert_persistent_store(options)
    volume, mount = redis["volumes"][0].split(":")
    assert volume in compose["volumes"] and mount == options["dir"] and "ports" not in redis
    assert app["depends_on"]["redis"] == {"condition": "service_started"}  # the app runs without it, and reconnects
    assert f"WORKDIR {mount}" in (DEPLOY / "redis" / "Dockerfile").read_text(encoding="utf-8")


def test_k8s_gives_every_pod_one_persistent_redis() -> None:
    """redis.yaml: one Redis pod with its claim, behind the Service the Deployment's ATTNVIZ_CLASS_STORE names, run
    with Compose's options; the app's Service does not select it."""
    found = {doc["kind"]: doc for doc in load_yaml(REDIS_MANIFEST)}
    service, redis = found["Service"], found["StatefulSet"]
    pod = redis["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    assert redis["spec"]["selector"]["matchLabels"] == pod["metadata"]["labels"] == service["spec"]["selector"]
    assert redis["spec"]["replicas"] == 1 and service["spec"]["selector"] != manifests()["Service"]["spec"]["selector"]
    (port,) = service["spec"]["ports"]
    assert container["ports"] == [{"name": port["targetPort"], "containerPort": 6379}]
    (app,) = manifests()["Deployment"]["spec"]["template"]["spec"]["containers"]
    url = urlsplit(next(e["value"] for e in app["env"] if e["name"] == "ATTNVIZ_CLASS_STORE"))
    assert (url.scheme, url.hostname, url.port) == ("redis", service["metadata"]["name"], port["port"])
    options = redis_options(container["args"])
    assert_persistent_store(options)
    assert options == redis_options(load_yaml(REPO_ROOT / "compose.yaml")[0]["services"]["redis"]["command"])
    (claim,) = redis["spec"]["volumeClaimTemplates"]
    assert container["volumeMounts"] == [{"name": claim["metadata"]["name"], "mountPath": options["dir"]}]
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True


def test_every_way_of_running_the_app_has_the_same_upload_caps() -> None:
    """make run, the tests, the image and with it Compose and Kubernetes all read .streamlit/config.toml's
    server.maxUploadSize (nothing sets it otherwise) and start the launcher, which caps what uploads a server keeps;
    both proxies take a request of that size."""
    config = tomllib.loads((REPO_ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    limit = config["server"]["maxUploadSize"]
    assert limit * 2**20 > STATE_FILE_MAX_BYTES and limit <= 8, "a state file, its framing, and no more"
    overrides = re.compile(r"--server\.maxUploadSize|STREAMLIT_SERVER_MAX_UPLOAD_SIZE")  # a flag, or its variable
    places = [REPO_ROOT / "Dockerfile", REPO_ROOT / "Makefile", REPO_ROOT / "compose.yaml", ENTRYPOINT]
    places += sorted((DEPLOY / "k8s").rglob("*.yaml"))
    assert [p.name for p in places if overrides.search(p.read_text(encoding="utf-8"))] == []
    copies = [args for name, args in dockerfile_instructions() if name == "COPY"]
    assert ".streamlit/config.toml /app/.streamlit/config.toml" in copies
    assert "exec python3 -m attnviz.app.server app.py" in ENTRYPOINT.read_text(encoding="utf-8")
    run = re.search(r"^run:.*\n\t(.*)$", (REPO_ROOT / "Makefile").read_text(encoding="utf-8"), re.MULTILINE)
    assert run and "-m attnviz.app.server app.py" in run.group(1)
    nginx = re.search(
        r"location ~ /_stcore/upload_file/ \{[^}]*client_max_body_size (\d+)m;", SITE_CONF.read_text(encoding="utf-8")
    )
    assert nginx and int(nginx.group(1)) == limit
    annotations = manifests()["Ingress"]["metadata"]["annotations"]
    assert annotations["nginx.ingress.kubernetes.io/proxy-body-size"] == f"{limit}m"


# ----- Kubernetes: the Ingress's hardening ---------------------------------------------------------------------

TLS_EXAMPLE = DEPLOY / "k8s" / "examples" / "ingress-tls.yaml"
# ingress-nginx's checks on a custom-headers ConfigMap (internal/ingress/annotations/customheaders): a name or value
# outside these is refused, and with it every path of the Ingress.
HEADER_NAME = re.compile(r"[a-zA-Z\d\-_]+")
HEADER_VALUE = re.compile(r"[a-zA-Z\d_ :;.,\\/\"'?!(){}\[\]@<>=\-+*#$&`|~^%]+")


def nginx_security_headers() -> dict[str, str]:
    """The four security headers deploy/nginx/attnviz.conf sends by default (the maps' defaults for the two a
    school edits for its LMS)."""
    site = (DEPLOY / "nginx" / "attnviz.conf").read_text(encoding="utf-8")
    headers = dict(re.findall(r"^\s*add_header ([\w-]+) (.+?) always;", site, re.MULTILINE))
    headers.pop("Set-Cookie")
    for name, value in headers.items():
        if value.startswith("$"):
            default = re.search(rf"^map \S+ {re.escape(value)} \{{\s*default \"(.*?)\";", site, re.MULTILINE)
            assert default, f"no default for {value}"
            headers[name] = default.group(1)
    return headers


def test_ingress_sends_the_same_security_headers_as_nginx() -> None:
    """The Ingress names (custom-headers, no snippet) a ConfigMap of this namespace holding exactly nginx's four
    headers, in a form ingress-nginx accepts."""
    k8s = manifests()
    annotations = k8s["Ingress"]["metadata"]["annotations"]
    namespace, name = annotations["nginx.ingress.kubernetes.io/custom-headers"].split("/")
    assert namespace == "default" and name == k8s["ConfigMap"]["metadata"]["name"]
    assert not [key for key in annotations if key.endswith("-snippet")], "snippets are disabled by default"
    headers = k8s["ConfigMap"]["data"]
    expected = {
        "Content-Security-Policy": "frame-ancestors 'self'",
        "X-Frame-Options": "SAMEORIGIN",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "strict-origin-when-cross-origin",
    }
    assert headers == nginx_security_headers() == expected
    assert all(HEADER_NAME.fullmatch(key) and HEADER_VALUE.fullmatch(value) for key, value in headers.items())
    # The controller's allow-list that the manifests and README.md tell the operator to set.
    allowed = ",".join(expected)
    for doc in (
        DEPLOY / "k8s" / "ingress.yaml",
        DEPLOY / "k8s" / "security-headers.yaml",
        DEPLOY / "k8s" / "README.md",
    ):
        assert allowed in doc.read_text(encoding="utf-8"), doc


def ingress_paths(ingress: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """path -> {pathType, backend} of the Ingress's one rule."""
    (rule,) = ingress["spec"]["rules"]
    return {p["path"]: {"pathType": p["pathType"], "backend": p["backend"]} for p in rule["http"]["paths"]}


def test_ingress_keeps_streamlits_metrics_from_the_internet() -> None:
    """/_stcore/metrics (Exact, so it wins over the app's Prefix /) goes to a Service that does not exist: the
    controller answers 503 and no pod is asked."""
    k8s = manifests()
    paths = ingress_paths(k8s["Ingress"])
    metrics = paths["/_stcore/metrics"]
    assert metrics["pathType"] == "Exact" and paths["/"]["pathType"] == "Prefix"
    services = {
        doc["metadata"]["name"]
        for path in (DEPLOY / "k8s").rglob("*.yaml")
        for doc in load_yaml(path)
        if doc["kind"] == "Service"
    }
    assert paths["/"]["backend"]["service"]["name"] in services
    assert metrics["backend"]["service"]["name"] not in services


def test_tls_example_is_the_ingress_with_tls_and_a_secure_cookie() -> None:
    """examples/ingress-tls.yaml: the same Ingress (name, annotations, paths) plus a host, a TLS Secret for it, an
    HTTPS redirect and session-cookie-secure; a valid manifest outside the folder `kubectl apply -f deploy/k8s/`
    reads."""
    plain = manifests()["Ingress"]
    (tls,) = load_yaml(TLS_EXAMPLE)
    assert tls["kind"] == "Ingress" and tls["metadata"]["name"] == plain["metadata"]["name"]
    annotations = dict(tls["metadata"]["annotations"])
    assert annotations.pop("nginx.ingress.kubernetes.io/session-cookie-secure") == "true"
    assert annotations.pop("nginx.ingress.kubernetes.io/force-ssl-redirect") == "true"
    assert annotations.pop("cert-manager.io/cluster-issuer")
    assert annotations == plain["metadata"]["annotations"]
    assert "nginx.ingress.kubernetes.io/session-cookie-secure" not in plain["metadata"]["annotations"], (
        "a Secure cookie over plain HTTP is refused by the browser: no affinity at all"
    )
    (entry,) = tls["spec"]["tls"]
    (rule,) = tls["spec"]["rules"]
    assert entry["secretName"] and entry["hosts"] == [rule["host"]]
    assert ingress_paths(tls) == ingress_paths(plain)
    assert TLS_EXAMPLE.parent != DEPLOY / "k8s"
    validate = Path(sys.executable).parent / "kubernetes-validate"
    if not validate.exists():
        pytest.skip("kubernetes-validate is not installed")
    result = subprocess.run(
        [str(validate), "--strict", "--quiet", str(TLS_EXAMPLE)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _image_removals() -> list[str]:
    """The site-packages paths (globs) the Dockerfile's build stage deletes as never used at run time."""
    text = (REPO_ROOT / "Dockerfile").read_text(encoding="utf-8")
    found = re.findall(r'"\$site"?/?([^"\s\\]*)"?', text.replace('"$site"/', '"$site/'))
    return [path for path in found if path]


def test_the_image_keeps_what_the_offline_html_file_carries() -> None:
    """The share box's offline file inlines Plotly's own bundle, read from plotly's package data, and typesets with
    latex2mathml: the image's clean-up must not delete them, and its build checks that both load."""
    import latex2mathml
    import plotly

    site = Path(plotly.__file__).resolve().parent.parent
    needed = [Path(plotly.__file__).parent / "package_data" / "plotly.min.js", Path(latex2mathml.__file__)]
    removals = _image_removals()
    assert any("pyarrow" in removal for removal in removals)  # the parsing finds the list
    for path in needed:
        relative = path.resolve().relative_to(site).as_posix()
        assert path.exists() and not [r for r in removals if fnmatch(relative, r) or relative.startswith(r + "/")]
    assert "plotly.offline.get_plotlyjs()" in (REPO_ROOT / "Dockerfile").read_text(encoding="utf-8")


def test_system_deps_waits_for_another_apt_instead_of_failing() -> None:
    """Issue 36, finding 11: the script failed at once when another apt or dpkg held the lock. Every apt-get call in
    it goes through one command with a bounded lock wait, and that command, run while another process holds dpkg's
    frontend lock for 3 s, waits and succeeds (without the wait, apt-get fails within milliseconds)."""
    script = (REPO_ROOT / "scripts" / "system-deps.sh").read_text()
    calls = [line for line in script.splitlines() if "apt-get" in line and not line.lstrip().startswith("#")]
    (definition,) = [line for line in calls if line.startswith("APT=(")]
    assert "DPkg::Lock::Timeout=" in definition
    assert [line for line in calls if line is not definition] == [], "an apt-get call without the lock wait"
    assert script.count('"${APT[@]}"') == 2  # update and install
    if os.geteuid() != 0:
        pytest.fail("needs root, as CI and `make test` have, to take dpkg's lock")
    lock = os.open("/var/lib/dpkg/lock-frontend", os.O_RDWR | os.O_CREAT)
    fcntl.lockf(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    threading.Timer(3, os.close, (lock,)).start()
    started = time.monotonic()
    done = subprocess.run(["bash", "-c", f'{definition}\n"${{APT[@]}}" -qq check'], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started >= 2.5  # it waited for the lock
