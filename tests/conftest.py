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

# Files are handed to the processes in this order (pytest-xdist's loadfile gives out whole files, first come first
# served): the long browser, proxy and load files first, so that the many short files fill in at the end instead of a
# long one starting last. Within a group, the collection's order.
_FIRST = ("tests/browser/", "tests/deploy/", "bench/tests/")


def _rank(item: pytest.Item) -> int:
    path = item.path.relative_to(_ROOT).as_posix() if item.path.is_relative_to(_ROOT) else str(item.path)
    return next((i for i, prefix in enumerate(_FIRST) if path.startswith(prefix)), len(_FIRST))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Put the long files first (a stable sort: a file's tests stay together and in order)."""
    items.sort(key=_rank)
