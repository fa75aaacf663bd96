"""Make `import reference` and `import attnviz` work whatever pytest's import mode is; keep every test's live classes
out of the user's data folder; scan the installed packages for Streamlit components once per process (not once per
AppTest); and, where the run is split over processes (`pytest -n 2`, the Makefile), hand out the long files first."""

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
# The seconds each took in a two-process run on 2 cores (2026-12-02, before the live files merged their walks); the
# files not named follow in collection order.
_LONGEST = (
    "tests/browser/test_live_class.py",  # 408 s
    "tests/browser/test_fuzz_links.py",  # 245
    "tests/test_fuzz_links.py",  # 238
    "tests/test_learned.py",  # 234
    "tests/browser/test_pages.py",  # 220
    "tests/browser/test_layout.py",  # 184
    "tests/test_learned_jobs.py",  # 173
    "tests/browser/test_proxy.py",  # 154
    "tests/browser/test_reconnect.py",  # 131
    "tests/browser/test_navigation.py",  # 115
    "bench/tests/test_class_load.py",  # 102
    "tests/browser/test_live_follow_runs.py",  # 123 (three classes then, one now)
    "tests/browser/test_live_projector.py",  # 77 (three classes then, two now)
    "tests/browser/test_learned.py",  # 67
    "tests/test_training_process.py",  # 49
    "tests/test_learned_page.py",  # 45
    "tests/browser/test_modern.py",  # 43
    "tests/browser/test_first_paint.py",  # 38
    "tests/deploy/test_build_pip.py",  # 35
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
