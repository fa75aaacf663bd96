"""Train the small models, deterministically from a seed, and keep what the attention looked like on the way.

    python -m attnviz.models.learned.train dates --seed 0
    python -m attnviz.models.learned.train induction --seed 0

writes the checkpoint the package ships (`attnviz/models/learned/checkpoints/`): the trained weights, the loss and
held-out accuracy every few steps, and the attention on fixed probe inputs at those steps, in one `safetensors`
file. The same settings give the same numbers, bit for bit, on the same kind of machine (and the same up to float32
rounding on a CPU with other vector instructions).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from torch import Tensor, nn

from attnviz.core.errors import AttnvizError, short
from attnviz.models.learned import dates, induction
from attnviz.models.learned.seq2seq import DateModelConfig, DateTranslator, translate_texts

CHECKPOINTS = Path(__file__).parent / "checkpoints"
# One thread, fixed: a run's numbers then do not depend on the machine's core count, and a training in the app spends
# at most one core of its container's CPU (a second thread made it no faster: 28 s for the dates either way)
TRAIN_THREADS = 1
TASKS = ("dates", "induction")
DEFAULT_PROBES = {
    "dates": ("22 November 2026", "二〇二六年十一月二十二日"),
    "induction": ("D H A Q K M P B D H A Q K M P B",),
}
DEFAULT_STEPS = {"dates": 300, "induction": 600}
MAX_STEPS = {"dates": 1000, "induction": 2000}
SNAPSHOTS = 40  # attention recorded this many times in a run, plus step 0
# The weights kept at each snapshot: float16 halves the shipped files (dates 44 snapshots, 9.4 MB; induction 41, 3.0 MB)
# and moves an attention weight by ~1e-3 at most, invisible on a chart (tests/test_replay.py measures it)
WEIGHTS_DTYPE = torch.float16
LEARNING_RATE = {"dates": 3e-3, "induction": 1e-3}
BATCH = {"dates": 128, "induction": 64}
EVAL_EXAMPLES = 250  # held-out examples at each snapshot; the final accuracy uses FINAL_EVAL_EXAMPLES
FINAL_EVAL_EXAMPLES = 2000

Progress = Callable[["Snapshot"], None]
Pause = Callable[[], None]  # called between two units of a training's work (the app paces it: its pacing.Pacer)


@dataclass(frozen=True)
class TrainSettings:
    """What decides a run: the task, the seed, the number of steps and the probe inputs whose attention is kept."""

    task: str
    seed: int = 0
    steps: int = 0  # 0: the task's default
    probes: tuple[str, ...] = ()  # (): the task's default

    def resolved(self) -> TrainSettings:
        """The same settings with the defaults filled in, checked."""
        if self.task not in TASKS:
            raise AttnvizError("choice", name="task", choices=", ".join(TASKS), value=short(repr(self.task)))
        steps = self.steps or DEFAULT_STEPS[self.task]
        if not 1 <= steps <= MAX_STEPS[self.task]:
            raise AttnvizError("steps_range", high=MAX_STEPS[self.task], task=self.task, value=short(steps))
        return TrainSettings(self.task, int(self.seed), steps, tuple(self.probes) or DEFAULT_PROBES[self.task])

    @property
    def snapshot_every(self) -> int:
        """Steps between two recorded snapshots."""
        return max(1, self.steps // SNAPSHOTS)


@dataclass(frozen=True)
class Snapshot:
    """The state of a run at one step: the mean loss since the last snapshot, held-out accuracy, probe attention."""

    step: int
    steps: int
    loss: float
    accuracy: float
    attention: Tensor  # dates: (probes, 10, T); induction: (layers, heads, T, T) for the first probe
    # The model's weights at this step, in float16 (WEIGHTS_DTYPE): enough to put any input through the recorded
    # training (replay.py). None when not kept (a training's JSON lines, a checkpoint written without them)
    weights: dict[str, Tensor] | None = None


@dataclass
class TrainingRun:
    """A trained model and its history."""

    settings: TrainSettings
    model: nn.Module
    snapshots: list[Snapshot] = field(default_factory=list)
    accuracy: float = 0.0  # on FINAL_EVAL_EXAMPLES held-out examples


@contextlib.contextmanager
def fixed_threads(threads: int | None = None) -> Iterator[None]:
    """Run torch with a fixed number of threads, and put the old number back."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads or TRAIN_THREADS)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def new_model(task: str) -> nn.Module:
    """A freshly initialised model for `task` (initialise it under torch.manual_seed for a given seed)."""
    if task == "dates":
        return DateTranslator(DateModelConfig(input_vocab=len(dates.INPUT_VOCAB)))
    return induction.InductionTransformer(induction.InductionConfig())


def probe_symbols(probe: str) -> list[str]:
    """A typed induction probe's symbols (1 to MAX_LENGTH - 1 of A-T), checked."""
    symbols, unknown = induction.parse_sequence(probe)
    if unknown or not 1 <= len(symbols) < induction.MAX_LENGTH:
        raise AttnvizError("induction_probe", most=induction.MAX_LENGTH - 1, value=short(repr(probe)))
    return symbols


def check_probes(settings: TrainSettings) -> None:
    """ValueError naming the first probe the task's model cannot read."""
    for probe in settings.probes:
        if settings.task == "induction":
            probe_symbols(probe)
        elif not probe or dates.unknown_characters(probe) or len(probe) > dates.MAX_PROBE_LENGTH:
            raise AttnvizError("dates_probe", most=dates.MAX_PROBE_LENGTH, value=short(repr(probe)))


def probe_attention(model: nn.Module, settings: TrainSettings) -> Tensor:
    """The attention of the probes now: dates (probes, 10, T max); induction (layers, heads, T, T) of probe 1."""
    model.eval()
    try:
        if settings.task == "dates":
            results = translate_texts(model, list(settings.probes))
            width = max(len(probe) for probe in settings.probes)
            attention = torch.zeros(len(results), dates.OUTPUT_LENGTH, width)
            for index, result in enumerate(results):
                attention[index, :, : len(result.text)] = result.trace.weights
            return attention
        return induction.sequence_attention(model, probe_symbols(settings.probes[0])).weights
    finally:
        model.train()


def held_out_accuracy(model: nn.Module, task: str, count: int, pause: Pause | None = None) -> float:
    """Dates: exact match of the whole ISO date. Induction: token accuracy on the repeat (after its first token).
    `pause` is called between two chunks of dates."""
    model.eval()
    try:
        if task == "dates":
            examples, right = dates.held_out_examples(count), 0
            for start in range(0, count, induction.EVAL_CHUNK):  # in chunks: a whole 2,000 held ~200 MB more
                chunk = examples[start : start + induction.EVAL_CHUNK]
                results = translate_texts(model, [example.text for example in chunk])
                right += sum(r.output == e.target for r, e in zip(results, chunk, strict=True))
                if pause is not None:
                    pause()
            return right / len(examples)
        return induction.token_accuracy(model, induction.held_out_examples(count))
    finally:
        model.train()


def _batch_loss(model: nn.Module, task: str, rng: random.Random, days: list) -> Tensor:
    """One batch of fresh training examples and the model's cross-entropy on it."""
    if task == "dates":
        examples = dates.sample_examples(days, BATCH[task], rng)
        rows, lengths = dates.encode_inputs([example.text for example in examples])
        targets = torch.tensor(dates.encode_targets([example.target for example in examples]), dtype=torch.long)
        logits = model(torch.tensor(rows, dtype=torch.long), torch.tensor(lengths, dtype=torch.long), targets)
        return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
    inputs, targets, scored = induction.encode(induction.sample_examples(BATCH[task], rng))
    logits = model(inputs)  # (B, T, vocab)
    return nn.functional.cross_entropy(logits[scored], targets[scored])


def train(
    settings: TrainSettings, progress: Progress | None = None, pause: Pause | None = None, threads: int | None = None
) -> TrainingRun:
    """Train from scratch; call `progress` with every snapshot as it is taken (step 0 first), and `pause` between
    two units of work (a step, a snapshot, a chunk of the final evaluation). `threads`: torch's, TRAIN_THREADS."""
    settings = settings.resolved()
    pause = pause or (lambda: None)
    with fixed_threads(threads):
        torch.manual_seed(settings.seed)
        model = new_model(settings.task)
        rng = random.Random(settings.seed)
        days = dates.training_days() if settings.task == "dates" else []
        optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE[settings.task])
        run = TrainingRun(settings, model)
        losses: list[float] = []

        def snapshot(step: int) -> None:
            if not losses:  # step 0: the untrained model's loss on a batch of its own (the training data untouched)
                with torch.no_grad():
                    losses.append(
                        _batch_loss(model, settings.task, random.Random(f"step0-{settings.seed}"), days).item()
                    )
            loss = sum(losses) / len(losses)
            taken = Snapshot(
                step,
                settings.steps,
                loss,
                held_out_accuracy(model, settings.task, EVAL_EXAMPLES),
                probe_attention(model, settings),
                {name: value.detach().to(WEIGHTS_DTYPE) for name, value in model.state_dict().items()},
            )
            run.snapshots.append(taken)
            losses.clear()
            if progress is not None:
                progress(taken)
            pause()

        snapshot(0)
        for step in range(1, settings.steps + 1):
            loss = _batch_loss(model, settings.task, rng, days)
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            losses.append(loss.item())
            pause()
            if step % settings.snapshot_every == 0 or step == settings.steps:
                snapshot(step)
        model.eval()
        run.accuracy = held_out_accuracy(model, settings.task, FINAL_EVAL_EXAMPLES, pause)
    return run


def checkpoint_path(task: str, seed: int = 0) -> Path:
    """Where the package keeps the checkpoint of `task` trained with `seed` and the default settings."""
    return CHECKPOINTS / f"{task}-seed{seed}.safetensors"


def run_tensors(run: TrainingRun, weights: bool = True) -> tuple[dict[str, Tensor], dict[str, str]]:
    """A run as named tensors and string metadata (what a safetensors file holds); with `weights`, the weights of
    every snapshot too (`snapshot.<index>.<name>`), when the run kept them."""
    tensors = {f"model.{name}": value.detach().contiguous() for name, value in run.model.state_dict().items()}
    if weights and run.snapshots and all(s.weights is not None for s in run.snapshots):
        for index, snapshot in enumerate(run.snapshots):
            for name, value in snapshot.weights.items():
                tensors[f"snapshot.{index}.{name}"] = value.to(WEIGHTS_DTYPE).contiguous()
    tensors["history.step"] = torch.tensor([s.step for s in run.snapshots], dtype=torch.int32)
    tensors["history.loss"] = torch.tensor([s.loss for s in run.snapshots], dtype=torch.float32)
    tensors["history.accuracy"] = torch.tensor([s.accuracy for s in run.snapshots], dtype=torch.float32)
    tensors["history.attention"] = torch.stack([s.attention for s in run.snapshots]).to(torch.float32).contiguous()
    metadata = {
        "settings": json.dumps(asdict(run.settings), ensure_ascii=False),
        "accuracy": repr(run.accuracy),
        "format": "attnviz-learned-1",
    }
    return tensors, metadata


def save_run(run: TrainingRun, path: Path) -> None:
    """Write the run to `path` as safetensors."""
    from safetensors.torch import save_file

    tensors, metadata = run_tensors(run)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(path), metadata=metadata)
    path.chmod(0o644)  # safetensors writes 0600; the image runs as another user than the one that built it


def run_bytes(run: TrainingRun) -> bytes:
    """The run as the bytes of a safetensors file, as `save_run` writes it but without the snapshots' weights (what
    the app's training worker sends back: its message stays small)."""
    from safetensors.torch import save

    tensors, metadata = run_tensors(run, weights=False)
    return save(tensors, metadata=metadata)


def load_run(path: Path) -> TrainingRun:
    """Read a run written by `save_run`: the model ready to use, and its history."""
    return load_run_bytes(path.read_bytes(), path.name)


def load_run_bytes(data: bytes, name: str | None = None) -> TrainingRun:
    """A run from the bytes of a safetensors file that `save_run` wrote (or `run_bytes` made)."""
    from safetensors.torch import load

    header_size = int.from_bytes(data[:8], "little")  # safetensors: the header's length, its JSON, then the data
    try:
        metadata = json.loads(data[8 : 8 + header_size]).get("__metadata__") or {}
    except (ValueError, AttributeError):
        metadata = {}
    if metadata.get("format") != "attnviz-learned-1":
        if name is None:
            raise AttnvizError("not_checkpoint")
        raise AttnvizError("not_checkpoint_file", name=short(name))
    tensors = load(data)
    raw = json.loads(metadata["settings"])
    settings = TrainSettings(raw["task"], raw["seed"], raw["steps"], tuple(raw["probes"]))
    model = new_model(settings.task)
    model.load_state_dict({name[6:]: value for name, value in tensors.items() if name.startswith("model.")})
    model.eval()
    attention = tensors["history.attention"]
    kept = _snapshot_weights(tensors)
    snapshots = [
        Snapshot(int(step), settings.steps, float(loss), float(accuracy), attention[index], kept.get(index))
        for index, (step, loss, accuracy) in enumerate(
            zip(tensors["history.step"], tensors["history.loss"], tensors["history.accuracy"], strict=True)
        )
    ]
    return TrainingRun(settings, model, snapshots, float(metadata["accuracy"]))


def _snapshot_weights(tensors: dict[str, Tensor]) -> dict[int, dict[str, Tensor]]:
    """The snapshots' weights a checkpoint keeps (`snapshot.<index>.<name>`), by snapshot index."""
    kept: dict[int, dict[str, Tensor]] = {}
    for key, value in tensors.items():
        if key.startswith("snapshot."):
            _, index, name = key.split(".", 2)
            kept.setdefault(int(index), {})[name] = value
    return kept


def snapshot_json(snapshot: Snapshot) -> dict[str, object]:
    """A snapshot as JSON-ready values (the attention rounded to float32's precision)."""
    return {
        "step": snapshot.step,
        "steps": snapshot.steps,
        "loss": snapshot.loss,
        "accuracy": snapshot.accuracy,
        "attention": snapshot.attention.tolist(),
    }


def snapshot_from_json(data: dict[str, object]) -> Snapshot:
    """A snapshot read back from `snapshot_json`'s values (checked: this is another process's output)."""
    attention = torch.tensor(data["attention"], dtype=torch.float32)
    return Snapshot(int(data["step"]), int(data["steps"]), float(data["loss"]), float(data["accuracy"]), attention)


def main(argv: list[str] | None = None, pause: Pause | None = None) -> None:
    """Train one task and write its checkpoint (by default, the one the package ships); `pause` is called between two
    units of work (the app's worker paces a training with it: attnviz/app/training/worker.py)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("task", choices=TASKS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=0, help="0: the task's default")
    parser.add_argument(
        "--out", default=None, help="default: the package's checkpoint for the seed; '-' with --json: a last JSON line"
    )
    parser.add_argument(
        "--probe", action="append", default=None, help="an input whose attention is recorded (repeat for more)"
    )
    parser.add_argument("--json", action="store_true", help="one JSON line per snapshot (what the app's queue reads)")
    parser.add_argument("--threads", type=int, default=TRAIN_THREADS, help="torch's threads")
    args = parser.parse_args(argv)
    started = time.perf_counter()

    def report(snapshot: Snapshot) -> None:
        if args.json:
            print(json.dumps(snapshot_json(snapshot)), flush=True)
            return
        print(
            f"step {snapshot.step:5d}/{snapshot.steps}  loss {snapshot.loss:.4f}  "
            f"held-out accuracy {snapshot.accuracy:.3f}  ({time.perf_counter() - started:.1f} s)",
            flush=True,
        )

    try:
        settings = TrainSettings(args.task, args.seed, args.steps, tuple(args.probe or ())).resolved()
        check_probes(settings)
    except ValueError as exc:
        parser.error(str(exc))
    run = train(settings, progress=report, pause=pause, threads=args.threads)
    if args.out == "-" and args.json:  # the checkpoint itself, so that nothing is left on disk
        print(json.dumps({"checkpoint": base64.b64encode(run_bytes(run)).decode("ascii")}), flush=True)
        return
    out = Path(args.out) if args.out else checkpoint_path(args.task, args.seed)
    save_run(run, out)
    if args.json:
        return
    print(
        f"{args.task}: {run.settings.steps} steps in {time.perf_counter() - started:.1f} s, held-out accuracy "
        f"{run.accuracy:.4f} on {FINAL_EVAL_EXAMPLES} examples; wrote {out} ({out.stat().st_size:,} bytes)"
    )


if __name__ == "__main__":
    main()
