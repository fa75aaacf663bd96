"""Make `import reference` and `import attnviz` work whatever pytest's import mode is; keep every test's live classes
out of the user's data folder; and, where the run is split over processes (`pytest -n 2`, the Makefile), hand out the
long files first."""

import atexit
import os
import shutil
import sys
import tempfile

import pytest

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(_HERE)
for _path in (_HERE, _ROOT):
    if _path not in sys.path:
        sys.path.insert(0, _path)

# One math thread per process, as the image runs the app (Dockerfile: OMP_NUM_THREADS=1): the test processes, the
# servers they start and the trainings those start share two cores. With PyTorch's default (a thread per core) every
# process's OpenMP workers spin for the cores the others use: two processes doing the same torch work took 54 s
# side by side against 13 s with one thread each. Set before anything imports torch; the servers inherit it.
for _variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

# A page that a test runs in this process (AppTest) and has no store named keeps its classes here, one folder per
# process: never in ~/.local/share/attnviz, and never shared by two processes of one run
if not os.environ.get("ATTNVIZ_DATA"):
    os.environ["ATTNVIZ_DATA"] = tempfile.mkdtemp(prefix="attnviz-test-data-")
    atexit.register(shutil.rmtree, os.environ["ATTNVIZ_DATA"], True)

# Files are handed to the processes in this order (pytest-xdist's loadfile gives out whole files as the processes free
# up; the Makefile keeps this order with --no-loadscope-reorder, which would otherwise put the files with the most tests
# first): the longest first, so that the many short files fill in at the end instead of a long one starting last.
# The seconds each took in a two-process run on 2 cores (2026-12-02); the files not named follow in collection order.
_LONGEST = (
    "tests/browser/test_fuzz_links.py",  # 582 s
    "tests/browser/test_live_class.py",  # 568
    "tests/test_fuzz_links.py",  # 462
    "tests/test_learned.py",  # 340
    "tests/browser/test_learned.py",  # 280
    "tests/test_learned_jobs.py",  # 241
    "tests/browser/test_layout.py",  # 236
    "tests/browser/test_pages.py",  # 187
    "tests/browser/test_live_follow_runs.py",  # 177
    "tests/browser/test_proxy.py",  # 177
    "tests/browser/test_reconnect.py",  # 169
    "tests/browser/test_navigation.py",  # 167
    "bench/tests/test_class_load.py",  # 121
    "tests/browser/test_live_projector.py",  # 117
    "tests/test_learned_page.py",  # 94
    "tests/test_training_process.py",  # 78
    "tests/browser/test_modern.py",  # 68
    "tests/deploy/test_build_pip.py",  # 51
)


def pytest_configure(config: pytest.Config) -> None:
    from testkit.apptest import scan_installed_components_once

    scan_installed_components_once()


def _rank(item: pytest.Item) -> int:
    path = item.path.relative_to(_ROOT).as_posix() if item.path.is_relative_to(_ROOT) else str(item.path)
    return _LONGEST.index(path) if path in _LONGEST else len(_LONGEST)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Put the long files first, longest first (a stable sort: a file's tests stay together and in order)."""
    items.sort(key=_rank)
