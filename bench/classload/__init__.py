"""Class load test: a class of simulated students behind the real nginx, adversaries alongside, a replica killed.

    python -m bench.classload --students 30 --minutes 5               # a full run: with and without adversaries
    python -m bench.classload --students 30 --minutes 1 --no-adversaries --kill-at 30
    python -m bench.classload --students 30 --minutes 5 --quota 1 --training --name class-quota-training  # root

Two app replicas (`python -m attnviz.app.server app.py`, one cookie secret) run on loopback behind nginx with the
project's site file (deploy/nginx/attnviz.conf, through testkit/nginx.py). Every client goes through the
proxy as a browser does (testkit/proxyclient.py): it GETs the page, gets nginx's affinity cookie, then opens the
websocket with it.

- Students spread over every page and move its real controls, thinking 1-3 s between actions. After each change the
  app must write the new value into the URL (`page_info_changed`); a change that does not show up is a lost input.
- Adversaries, alongside: the crafted link (512 different CJK tokens, 64 dimensions, 8 heads, random projections,
  additive scoring with 256 hidden units, a concat_tanh comparison) reopened in new sessions again and again;
  254-WordPiece sentences on the model page, each different, each in a new session that then disconnects;
  oversized links (600 KB, 2,000 parameters) and junk links.
- One replica is SIGKILLed midway and restarted 20 s later, as a supervisor would. Every student whose session was
  on it reconnects as a browser does and changes a control soon after; the change must reach the URL, and the page
  must come back from its link.
- `--memory MIB`: each replica's cgroup limited to MIB MiB, as a pod's memory limit (its trainings included): the
  kernel kills what goes past it, and the report counts it.
- `--quota CORES`: each replica in a cgroup of its own with CORES cores of CPU quota, as a pod's CPU limit (its
  restart and the trainings it starts too; testkit/cgroups.py, needs root). `--training`: a training always running
  beside the class (a client presses Train on the Learned attention page, again as each training ends).

Results: bench/results/<date>-class.md and .json (`--name`: <date>-<name>.*). The method is in bench/README.md
("Class load test").
"""

# The package: `config` (a run's configuration), `students` (a student's tab, its changes, its reconnection),
# `adversaries`, `trainer` (the training alongside), `cluster` (the replicas behind nginx, their memory), `run` (one
# run of them all), `report` (the verdicts and the Markdown report) and `__main__` (the command line). What other code
# uses is imported here.

from bench.classload.cluster import Cluster, Replica
from bench.classload.config import ClassConfig
from bench.classload.report import checks, markdown
from bench.classload.run import ClassRun, run_async, run_class
from bench.classload.students import Student, page_restored, reevaluate

__all__ = [
    "ClassConfig",
    "ClassRun",
    "Cluster",
    "Replica",
    "Student",
    "checks",
    "markdown",
    "page_restored",
    "reevaluate",
    "run_async",
    "run_class",
]
