"""How long a training takes on this server, from what its trainings took: the estimates a student sees in line.

A training's time is a start (the process, torch, the model and step 0's snapshot) and a time per step (its steps,
snapshots and final evaluation, spread over its steps). Both start from figures measured on a quiet two-core machine
and follow what this server's trainings actually took (each finished training moves them halfway). A training paces
itself to what the class leaves it (`attnviz.app.training.pacing`), so a busy server trains slower: the one running now
says by how much (its own time per step so far against the usual), and the trainings waiting behind it are
estimated at that pace.
"""

from __future__ import annotations

from dataclasses import dataclass

# Seconds on a quiet two-core machine (bench/README.md, "Training the small models"): dates 300 steps in 28 s,
# the repeat 600 steps in 12 s, each ~2.5 s of it before the first snapshot.
QUIET = {"dates": (2.5, 0.085), "induction": (2.5, 0.016)}
FOLLOW = 0.5  # how far a finished training moves the figures towards its own
MIN_STEPS_TO_JUDGE = 5  # a running training's pace counts from this many steps on


@dataclass
class TaskTiming:
    """One task's figures on this server."""

    start_s: float
    step_s: float

    def seconds(self, steps: int, slower: float = 1.0) -> float:
        """A whole training of `steps`, `slower` times the usual pace."""
        return self.start_s + steps * self.step_s * slower


class Timings:
    """Each task's start and time per step on this server."""

    def __init__(self) -> None:
        self.tasks = {task: TaskTiming(*figures) for task, figures in QUIET.items()}

    def learn(self, task: str, start_s: float, steps: int, steps_s: float) -> None:
        """A finished training: `start_s` to its first snapshot, then `steps_s` for its `steps`."""
        timing = self.tasks[task]
        timing.start_s += FOLLOW * (start_s - timing.start_s)
        timing.step_s += FOLLOW * (steps_s / max(1, steps) - timing.step_s)

    def running(
        self, task: str, steps: int, done: int, since_first: float | None, since_start: float
    ) -> tuple[float, float]:
        """A training under way: `done` of its `steps`, `since_first` seconds after its first snapshot (None before
        it), `since_start` after it started. The seconds it still needs, and how many times slower than usual it
        goes (1 until it has done a few steps)."""
        timing = self.tasks[task]
        if since_first is None:
            return max(0.0, timing.start_s - since_start) + steps * timing.step_s, 1.0
        if done < MIN_STEPS_TO_JUDGE:
            return (steps - done) * timing.step_s, 1.0
        pace = since_first / done
        return (steps - done) * pace, min(50.0, max(0.5, pace / timing.step_s))
