"""Any input through the recorded training (issue 40 §1): the shipped checkpoints keep the weights of every snapshot,
and a typed input's attention at any step is computed from them."""

from __future__ import annotations

import torch

from attnviz.models.learned import induction, replay
from attnviz.models.learned.seq2seq import translate_texts
from attnviz.models.learned.train import (
    CHECKPOINTS,
    SNAPSHOTS,
    WEIGHTS_DTYPE,
    load_run,
    load_run_bytes,
    run_bytes,
    save_run,
)

FLOAT16_TOLERANCE = 3e-3  # an attention weight from float16 weights against the float32 record (measured: 1.2e-3)


def _shipped(task: str):
    return load_run(CHECKPOINTS / f"{task}-seed0.safetensors")


def test_the_shipped_checkpoints_keep_every_snapshots_weights():
    for task in ("dates", "induction"):
        run = _shipped(task)
        assert len(run.snapshots) >= SNAPSHOTS + 1 and replay.replayable(run)  # every 7th of 300 steps: 44
        assert all(v.dtype == WEIGHTS_DTYPE for s in run.snapshots for v in s.weights.values())
        final = run.snapshots[-1].weights
        for name, value in run.model.state_dict().items():  # the last snapshot is the shipped model, in float16
            torch.testing.assert_close(final[name].float(), value, rtol=1e-3, atol=1e-3)


def test_a_probe_put_through_the_kept_weights_gives_the_attention_recorded_while_training():
    """The record was taken in float32 during the training itself: an independent check of the kept weights."""
    for task in ("dates", "induction"):
        run = _shipped(task)
        probe = run.settings.probes[0]
        for index in (0, 1, 5, 20, len(run.snapshots) - 1):
            recorded = run.snapshots[index].attention
            replayed = replay.attention_at(run, index, probe)
            if task == "dates":
                recorded = recorded[0, :, : len(probe)]
            assert replayed.shape == recorded.shape
            assert (replayed - recorded).abs().max().item() < FLOAT16_TOLERANCE, (task, index)


def test_the_attention_of_a_new_date_changes_through_training_and_ends_as_the_trained_models():
    run = _shipped("dates")
    date = "3 March 2027"
    first, last = replay.attention_at(run, 0, date), replay.attention_at(run, len(run.snapshots) - 1, date)
    assert first.shape == last.shape == (10, len(date))
    assert torch.allclose(first.sum(-1), torch.ones(10), atol=1e-5)
    trained = translate_texts(run.model, [date])[0]
    assert trained.output == "2027-03-03"
    assert (last - trained.trace.weights).abs().max().item() < FLOAT16_TOLERANCE
    assert (first - last).abs().max().item() > 0.3  # the untrained model attends elsewhere


def test_a_new_sequence_through_the_kept_weights_of_the_induction_model():
    run = _shipped("induction")
    sequence = "C F J C F J"
    weights = replay.attention_at(run, len(run.snapshots) - 1, sequence)
    assert weights.shape == (2, 2, 7, 7)
    trained = induction.sequence_attention(run.model, induction.parse_sequence(sequence)[0]).weights
    assert (weights - trained).abs().max().item() < FLOAT16_TOLERANCE


def test_only_what_the_model_can_read_is_replayed():
    assert replay.readable("dates", "3 March 2027") and replay.readable("induction", "A B C")
    assert not replay.readable("dates", "") and not replay.readable("dates", "€€€")
    assert not replay.readable("induction", "A 1 B") and not replay.readable("induction", "A" * 40)


def test_the_weights_survive_a_save_and_the_workers_message_leaves_them_out(tmp_path):
    run = _shipped("induction")
    path = tmp_path / "copy.safetensors"
    save_run(run, path)
    again = load_run(path)
    assert replay.replayable(again)
    for ours, theirs in zip(run.snapshots, again.snapshots, strict=True):
        assert all(torch.equal(ours.weights[name], theirs.weights[name]) for name in ours.weights)
    small = load_run_bytes(run_bytes(run))
    assert not replay.replayable(small) and len(run_bytes(run)) < path.stat().st_size / 5
