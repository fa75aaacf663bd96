"""pip in the image's build stages (deploy/docker/pip.sh), against real package indexes, without a Docker engine.

A private mirror over HTTPS with a certificate authority of its own, and a plain-HTTP mirror, are served from a
network namespace made here, on a non-loopback address, as a school's LAN mirror is (pip treats loopback as secure,
so 127.0.0.1 would hide the plain-HTTP case). pip runs exactly as the Dockerfile runs it: through pip.sh, with the
build arguments as pip's environment and a deploy/pip/ folder. tests/docker/build_check.py builds the real image
the same ways where a Docker engine runs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.deploy.package_index import Namespace, certificate_authority, make_index

REPO_ROOT = Path(__file__).resolve().parents[2]
PIP_SH = REPO_ROOT / "deploy" / "docker" / "pip.sh"
WHEEL = "segno"  # one small pure-Python wheel the app pins


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel folder with the pinned segno wheel, downloaded once."""
    folder = tmp_path_factory.mktemp("wheels")
    pin = next(line for line in (REPO_ROOT / "requirements.txt").read_text().splitlines() if line.startswith("segno"))
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--dest", str(folder), pin],
        check=True,
        timeout=300,
    )
    assert len(list(folder.glob("*.whl"))) == 1
    return folder


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory, wheels: Path) -> Iterator[dict[str, object]]:
    """The wheel folder as a PEP 503 index in a network namespace: HTTPS on :8443 (a certificate from a CA made
    here), plain HTTP on :8080."""
    root = tmp_path_factory.mktemp("index")
    assert make_index(wheels, root) == [WHEEL]
    namespace = Namespace(f"attnviz-pip-{os.getpid()}", 201)
    processes = []
    try:
        ca, cert, key = certificate_authority(root.parent / "tls", namespace.address)
        processes.append(namespace.serve(root, 8443, root.parent / "https.log", cert, key))
        processes.append(namespace.serve(root, 8080, root.parent / "http.log"))
        yield {"address": namespace.address, "ca": ca, "logs": root.parent}
    finally:
        for process in processes:
            process.kill()
            process.wait(timeout=10)
        namespace.close()


def pip_sh(folder: Path, target: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """`pip.sh FOLDER PIP install --target TARGET segno` with only the given PIP_* environment, as in the build
    (no pip configuration file of this machine's, no cache)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    # A machine behind a TLS-inspecting proxy often sets REQUESTS_CA_BUNDLE, which requests lets override pip's
    # PIP_CERT: set here to a bundle without the test's CA, pip.sh must still get its bundle through.
    clean["REQUESTS_CA_BUNDLE"] = certifi_bundle()
    pip = str(Path(sys.executable).parent / "pip")
    return subprocess.run(
        ["sh", str(PIP_SH), str(folder), pip, "install", "--target", str(target), "--only-binary=:all:", WHEEL],
        env={**clean, "PIP_CONFIG_FILE": os.devnull, "PIP_NO_CACHE_DIR": "1", "PIP_RETRIES": "0", **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


def certifi_bundle() -> str:
    from pip._vendor import certifi

    return certifi.where()


def installed(target: Path) -> bool:
    return (target / WHEEL / "__init__.py").is_file()


def test_a_private_https_mirror_is_trusted_through_its_ca_in_deploy_pip(mirror: dict, tmp_path: Path) -> None:
    """Without its CA pip refuses the mirror's certificate; with ca.crt in the folder it installs from it."""
    index = f"https://{mirror['address']}:8443/simple"
    folder = tmp_path / "pip"
    folder.mkdir()
    refused = pip_sh(folder, tmp_path / "refused", PIP_INDEX_URL=index)
    assert refused.returncode != 0 and "CERTIFICATE_VERIFY_FAILED" in refused.stdout + refused.stderr
    assert not installed(tmp_path / "refused")

    shutil.copy(mirror["ca"], folder / "school-proxy.crt")
    trusted = pip_sh(folder, tmp_path / "trusted", PIP_INDEX_URL=index)
    assert trusted.returncode == 0, trusted.stdout + trusted.stderr
    assert "trusting the certificate authorities in" in trusted.stderr and "school-proxy.crt" in trusted.stderr
    assert installed(tmp_path / "trusted")
    # pip's own bundle is kept: the public index (through the CA bundle pip already trusts) still verifies.
    assert f"GET /simple/{WHEEL}/" in (mirror["logs"] / "https.log").read_text()


def test_a_plain_http_mirror_on_the_lan_needs_pip_trusted_host(mirror: dict, tmp_path: Path) -> None:
    """A plain-HTTP index on a non-loopback address is refused as "not a trusted or secure host" until
    PIP_TRUSTED_HOST (the build argument) names it."""
    index = f"http://{mirror['address']}:8080/simple"
    folder = tmp_path / "pip"
    folder.mkdir()
    refused = pip_sh(folder, tmp_path / "refused", PIP_INDEX_URL=index, PIP_TRUSTED_HOST="")
    assert refused.returncode != 0
    assert "not a trusted or secure host" in refused.stdout + refused.stderr
    trusted = pip_sh(folder, tmp_path / "trusted", PIP_INDEX_URL=index, PIP_TRUSTED_HOST=str(mirror["address"]))
    assert trusted.returncode == 0, trusted.stdout + trusted.stderr
    assert installed(tmp_path / "trusted")


def test_a_wheel_folder_is_used_alone(wheels: Path, tmp_path: Path) -> None:
    """With wheels in deploy/pip/wheels/ no index is asked: the index below does not exist (TEST-NET-1)."""
    folder = tmp_path / "pip"
    shutil.copytree(wheels, folder / "wheels")
    result = pip_sh(folder, tmp_path / "target", PIP_INDEX_URL="http://192.0.2.1:9/simple", PIP_TRUSTED_HOST="")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "installing from the wheel folder" in result.stderr and "192.0.2.1" not in result.stdout
    assert installed(tmp_path / "target")


def test_a_file_that_is_not_a_certificate_is_named(tmp_path: Path) -> None:
    """A .crt that holds no PEM certificate (a DER file, a key, a typo) stops the build, naming the file."""
    folder = tmp_path / "pip"
    folder.mkdir()
    (folder / "proxy.crt").write_bytes(b"\x30\x82\x03\x0d not PEM")
    result = pip_sh(folder, tmp_path / "target", PIP_INDEX_URL="http://192.0.2.1:9/simple")
    assert result.returncode != 0
    assert f"{folder / 'proxy.crt'} is not a PEM certificate" in result.stderr
    assert not installed(tmp_path / "target")
