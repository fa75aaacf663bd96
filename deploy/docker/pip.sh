#!/bin/sh
# pip for the image's build stages:  pip.sh FOLDER PIP ARGUMENTS...
#
# FOLDER is the build context's deploy/pip/ (see its README.md), copied into the build stage:
#   *.crt, *.pem   certificate authorities pip must trust as well as its own bundle: a TLS-inspecting proxy's,
#                  a private mirror's. They are appended to pip's own bundle, in a file of the build stage
#                  that the image never gets (the runtime stage copies only /opt/venv).
#   wheels/        a wheel folder: when it holds any .whl, pip installs from it alone and asks no index.
# Everything else is pip's own environment, which the Dockerfile's build arguments set: PIP_INDEX_URL,
# PIP_EXTRA_INDEX_URL and PIP_TRUSTED_HOST.
set -eu
folder="$1"
pip="$2"
shift 2

certificates="$(find "$folder" -maxdepth 1 -type f \( -name '*.crt' -o -name '*.pem' \) | LC_ALL=C sort)"
if [ -n "$certificates" ]; then
    bundle="$(mktemp)"
    "$(dirname "$pip")/python" -c 'from pip._vendor import certifi; print(certifi.where())' | xargs cat >"$bundle"
    echo "$certificates" | while IFS= read -r certificate; do
        if ! grep -q -- '-----BEGIN CERTIFICATE-----' "$certificate"; then
            echo "pip.sh: $certificate is not a PEM certificate (-----BEGIN CERTIFICATE----- ...)" >&2
            exit 1
        fi
        echo "pip.sh: trusting the certificate authorities in $certificate" >&2
        printf '\n' >>"$bundle"
        cat "$certificate" >>"$bundle"
    done
    # PIP_CERT is pip's own setting; requests lets REQUESTS_CA_BUNDLE (where it is set) override it, and a pip that
    # verifies with the system's store (truststore) reads SSL_CERT_FILE: all three name the bundle.
    export PIP_CERT="$bundle" REQUESTS_CA_BUNDLE="$bundle" SSL_CERT_FILE="$bundle"
fi

if find "$folder/wheels" -maxdepth 1 -type f -name '*.whl' 2>/dev/null | grep -q .; then
    echo "pip.sh: installing from the wheel folder $folder/wheels alone (no index)" >&2
    export PIP_NO_INDEX=1 PIP_FIND_LINKS="$folder/wheels"
fi

exec "$pip" "$@"
