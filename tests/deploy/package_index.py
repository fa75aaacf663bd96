"""A package index for the image-build tests, made from a wheel folder and served by a real HTTP(S) server.

- `make_index(wheels, root)` writes a PEP 503 "simple" index of the wheels: `root/simple/<project>/index.html`,
  linking to `root/files/<wheel>#sha256=...`.
- `certificate_authority(folder, address)` makes, with openssl, a certificate authority of the test's own and a
  server certificate it signed for `address` (an IP address): what a private mirror or a TLS-inspecting proxy has.
- `Namespace` is a network namespace with a veth pair: a host on its own non-loopback address (a LAN mirror), which
  this machine and its containers reach through the host's routing.
- Run as a script, it serves `root` (over HTTPS with --cert and --key), prints "serving", and logs each request.
"""

from __future__ import annotations

import argparse
import hashlib
import html
import http.server
import os
import re
import shutil
import ssl
import subprocess
import sys
import time
from pathlib import Path


def project_name(wheel: str) -> str:
    """A wheel file's project, normalised as PEP 503 asks ("Jinja2-3.1.whl" -> "jinja2")."""
    return re.sub(r"[-_.]+", "-", wheel.split("-", 1)[0]).lower()


def make_index(wheels: Path, root: Path, name: str = "simple") -> list[str]:
    """Write a PEP 503 index of every wheel in `wheels` at `root/<name>/`; return the projects."""
    projects: dict[str, list[Path]] = {}
    for wheel in sorted(wheels.glob("*.whl")):
        projects.setdefault(project_name(wheel.name), []).append(wheel)
    files = root / "files"
    files.mkdir(parents=True, exist_ok=True)
    simple = root / name
    for project, project_wheels in projects.items():
        links = []
        for wheel in project_wheels:
            target = files / wheel.name
            if not target.exists():
                try:
                    os.link(wheel, target)
                except OSError:
                    shutil.copyfile(wheel, target)
            digest = hashlib.sha256(target.read_bytes()).hexdigest()
            href = html.escape(f"../../files/{wheel.name}#sha256={digest}")
            links.append(f'<a href="{href}">{html.escape(wheel.name)}</a><br>')
        (simple / project).mkdir(parents=True, exist_ok=True)
        (simple / project / "index.html").write_text(
            "<!DOCTYPE html><html><body>\n" + "\n".join(links) + "\n</body></html>\n", encoding="utf-8"
        )
    names = "\n".join(f'<a href="{p}/">{p}</a><br>' for p in sorted(projects))
    (simple / "index.html").write_text(f"<!DOCTYPE html><html><body>\n{names}\n</body></html>\n", encoding="utf-8")
    return sorted(projects)


def certificate_authority(folder: Path, address: str) -> tuple[Path, Path, Path]:
    """(ca.crt, server.crt, server.key): a test CA, and a server certificate it signed for the IP `address`."""
    folder.mkdir(parents=True, exist_ok=True)
    ca_key, ca_crt = folder / "ca.key", folder / "ca.crt"
    key, csr, crt = folder / "server.key", folder / "server.csr", folder / "server.crt"
    extensions = folder / "server.ext"
    extensions.write_text(
        f"subjectAltName = IP:{address}\nbasicConstraints = CA:FALSE\nextendedKeyUsage = serverAuth\n"
        "keyUsage = digitalSignature, keyEncipherment\n",
        encoding="ascii",
    )
    ca_subject = "/CN=attnviz test mirror CA"
    run = [
        f"openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj {{ca}} -keyout {ca_key} -out {ca_crt}",
        f"openssl req -newkey rsa:2048 -nodes -subj /CN={address} -keyout {key} -out {csr}",
        f"openssl x509 -req -in {csr} -CA {ca_crt} -CAkey {ca_key} -CAcreateserial -days 2 -extfile {extensions}"
        f" -out {crt}",
    ]
    for command in run:
        arguments = [ca_subject if word == "{ca}" else word for word in command.split()]
        subprocess.run(arguments, check=True, capture_output=True, timeout=60)
    return ca_crt, crt, key


class Namespace:
    """A network namespace joined to this host by a veth pair: the host at `host_address`, the namespace at
    `address`, both on a /24 of their own, the namespace's default route through the host (so replies reach
    containers behind Docker's NAT as well). Needs root. `close()` removes it."""

    def __init__(self, name: str, subnet: int) -> None:
        self.name = name
        self.host_address = f"10.213.{subnet}.1"
        self.address = f"10.213.{subnet}.2"
        self.host_link = f"av{subnet}h"
        link = f"av{subnet}n"
        self.close()
        for command in [
            ["ip", "netns", "add", name],
            ["ip", "link", "add", self.host_link, "type", "veth", "peer", "name", link],
            ["ip", "link", "set", link, "netns", name],
            ["ip", "addr", "add", f"{self.host_address}/24", "dev", self.host_link],
            ["ip", "link", "set", self.host_link, "up"],
            ["ip", "-n", name, "addr", "add", f"{self.address}/24", "dev", link],
            ["ip", "-n", name, "link", "set", link, "up"],
            ["ip", "-n", name, "link", "set", "lo", "up"],
            ["ip", "-n", name, "route", "add", "default", "via", self.host_address],
        ]:
            subprocess.run(command, check=True, capture_output=True, text=True, timeout=30)

    def serve(self, root: Path, port: int, log: Path, cert: Path | None = None, key: Path | None = None):
        """Start this module's server inside the namespace on `address:port`; return the process once it serves."""
        command = ["ip", "netns", "exec", self.name, sys.executable, __file__, str(root), self.address, str(port)]
        if cert and key:
            command += ["--cert", str(cert), "--key", str(key)]
        out = log.open("wb")
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while b"serving" not in log.read_bytes():
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(f"the index server did not start: {log.read_text(errors='replace')}")
            time.sleep(0.1)
        return process

    def close(self) -> None:
        subprocess.run(["ip", "link", "delete", self.host_link], capture_output=True, timeout=30)
        subprocess.run(["ip", "netns", "delete", self.name], capture_output=True, timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("root", type=Path)
    parser.add_argument("host")
    parser.add_argument("port", type=int)
    parser.add_argument("--cert", type=Path)
    parser.add_argument("--key", type=Path)
    options = parser.parse_args()

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(options.root), **kwargs)

    server = http.server.ThreadingHTTPServer((options.host, options.port), Handler)
    if options.cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(options.cert, options.key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    print("serving", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
