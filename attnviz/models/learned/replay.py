"""Any input through a recorded training: the model at each snapshot, rebuilt from the weights its checkpoint keeps.

A run records the attention on the task's own probes as it trains; a student's own date or sequence was not among
them. The shipped checkpoints also keep the weights at every snapshot (float16, train.WEIGHTS_DTYPE), so the
attention of any input the model can read is computed at any recorded step, at once, with no training.
"""

from __future__ import annotations

from torch import Tensor, nn

from attnviz.core.errors import AttnvizError
from attnviz.models.learned import induction
from attnviz.models.learned.seq2seq import translate_texts
from attnviz.models.learned.train import TrainingRun, TrainSettings, check_probes, new_model, probe_symbols


def replayable(run: TrainingRun) -> bool:
    """Whether `run` kept the weights of every snapshot (the shipped checkpoints do; a training in the app does not)."""
    return bool(run.snapshots) and all(snapshot.weights is not None for snapshot in run.snapshots)


def readable(task: str, text: str) -> bool:
    """Whether the model of `task` can read `text` (the checks a probe passes)."""
    try:
        check_probes(TrainSettings(task, probes=(text,)))
    except AttnvizError:
        return False
    return True


def snapshot_model(run: TrainingRun, index: int) -> nn.Module:
    """The model as it was at snapshot `index` of `run` (its float16 weights, in float32), ready to use."""
    weights = run.snapshots[index].weights
    if weights is None:
        raise AttnvizError("no_snapshot_weights")
    model = new_model(run.settings.task)
    model.load_state_dict({name: value.float() for name, value in weights.items()})
    model.eval()
    return model


def attention_at(run: TrainingRun, index: int, text: str) -> Tensor:
    """The attention of `text` at snapshot `index`, shaped as the run's own records: dates (10, T), the decoder's
    weights while the model of that step writes its own answer; induction (layers, heads, T, T) on <s> + the
    symbols."""
    model = snapshot_model(run, index)
    if run.settings.task == "dates":
        return translate_texts(model, [text])[0].trace.weights
    return induction.sequence_attention(model, probe_symbols(text)).weights
