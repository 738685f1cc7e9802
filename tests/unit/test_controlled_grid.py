"""The sink task, the tiny transformer's switches and the grid's measures, on cases with known answers."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch

from sinkframes.analyses import controlled
from sinkframes.training.controlled import GridPlan, RunSpec, grid, train_run
from sinkframes.training.sink_task import BOS, FILLER, MARKED, TRIGGER, SinkTask
from sinkframes.training.tiny import POSITIONS, TinyConfig, apply_rope, build, rope_angles
from sinkframes.verdicts import MEASURES, NULLS
from sinkframes.verdicts.verdict import NOT_SUPPORTED, SUPPORTED

TASK = SinkTask()


def test_targets_are_the_mean_of_visible_marked_contents_at_triggers_only():
    ids = torch.tensor([[BOS, MARKED, FILLER, TRIGGER, MARKED, TRIGGER]])
    content = torch.zeros(1, 6, 2)
    content[0, 1] = torch.tensor([1.0, 0.0])
    content[0, 4] = torch.tensor([0.0, 3.0])
    content[0, 2] = torch.tensor([5.0, 5.0])  # a filler: never counted
    causal = SinkTask(content_dim=2, length=6).targets(ids, content, causal=True)[0]
    assert torch.allclose(causal[3], torch.tensor([1.0, 0.0]))  # only the marked token before it
    assert torch.allclose(causal[5], torch.tensor([0.5, 1.5]))  # both marked tokens
    assert causal[[0, 1, 2, 4]].abs().sum() == 0
    both = SinkTask(content_dim=2, length=6).targets(ids, content, causal=False)[0]
    assert torch.allclose(both[3], torch.tensor([0.5, 1.5]))  # the encoder sees the later one too


def test_a_trigger_with_no_marked_token_in_view_must_output_zero():
    ids = torch.tensor([[BOS, TRIGGER, FILLER]])
    content = torch.randn(1, 3, TASK.content_dim)
    assert TASK.targets(ids, content, causal=True).abs().sum() == 0


def test_samples_start_with_a_contentless_bos_and_are_seeded():
    a = TASK.sample(8, torch.Generator().manual_seed(3))
    b = TASK.sample(8, torch.Generator().manual_seed(3))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert (a[0][:, 0] == BOS).all() and (a[0][:, 1:] != BOS).all()
    assert a[1][:, 0].abs().sum() == 0


def test_rope_leaves_position_zero_and_the_unrotated_dimensions_alone():
    cfg = TinyConfig(4, 8, position="partial_0.25")
    angles = rope_angles(cfg, 5, torch.device("cpu"))
    assert angles is not None and angles.shape == (5, 2)  # a quarter of 16 dimensions: 2 pairs
    x = torch.randn(1, 1, 5, 16)
    y = apply_rope(x, angles)
    assert torch.equal(y[..., 0, :], x[..., 0, :])
    assert torch.equal(y[..., 4:], x[..., 4:])
    assert torch.allclose(y.norm(dim=-1), x.norm(dim=-1), atol=1e-6)  # a rotation keeps norms
    assert rope_angles(TinyConfig(4, 8, position="nope"), 5, torch.device("cpu")) is None


def test_without_positions_an_encoder_is_permutation_equivariant():
    model = build(TinyConfig(TASK.vocab_size, TASK.content_dim, position="nope", causal=False), 0)
    ids, content = TASK.sample(2, torch.Generator().manual_seed(0))
    perm = torch.cat([torch.tensor([0]), 1 + torch.randperm(31, generator=torch.Generator().manual_seed(1))])
    out, _ = model(ids, content)
    out_p, _ = model(ids[:, perm], content[:, perm])
    assert torch.allclose(out[:, perm], out_p, atol=1e-5)
    learned = build(TinyConfig(TASK.vocab_size, TASK.content_dim, position="learned", causal=False), 0)
    assert not torch.allclose(learned(ids, content)[0][:, perm], learned(ids[:, perm], content[:, perm])[0], atol=1e-5)


def test_masks_and_normalizations():
    ids, content = TASK.sample(2, torch.Generator().manual_seed(0))
    for attention in ("softmax", "gated", "sigmoid"):
        _, w = build(TinyConfig(TASK.vocab_size, TASK.content_dim, attention=attention), 0)(ids, content)
        assert w.shape == (2, 2, 2, 32, 32)
        assert w.triu(1).abs().sum() == 0  # causal: no weight on later keys
        rows = w.sum(-1)
        assert torch.allclose(rows, torch.ones_like(rows)) == (attention != "sigmoid")


def test_one_seed_gives_every_variant_the_same_shared_weights():
    base = build(RunSpec("decoder", "rope", "softmax", 2).config(TASK), 2).state_dict()
    for spec in (RunSpec("decoder", "learned", "softmax", 2), RunSpec("decoder", "nope", "gated", 2),
                 RunSpec("encoder", "partial_0.5", "sigmoid", 2)):
        other = build(spec.config(TASK), 2).state_dict()
        assert all(torch.equal(v, other[k]) for k, v in base.items()), spec.name


def test_the_grid_covers_every_switch_with_three_seeds():
    runs = grid()
    assert {r.position for r in runs} == set(POSITIONS)
    cells = {r.cell for r in runs}
    assert len(runs) == 3 * len(cells)
    assert {r.attention for r in runs} == {"softmax", "sigmoid", "gated"}


def test_training_is_deterministic_and_checkpoints_on_its_plan():
    plan = GridPlan(steps=8, checkpoints=(0, 4, 8))
    spec = RunSpec("encoder", "learned", "gated", 0)
    a, loss_a, _ = train_run(spec, plan)
    b, loss_b, _ = train_run(spec, plan)
    assert sorted(a) == [0, 4, 8] and loss_a == loss_b and len(loss_a) == 8
    assert all(torch.equal(a[8][k], b[8][k]) for k in a[8])
    assert not torch.equal(a[0]["embed.weight"], a[8]["embed.weight"])


def _attention(kind: str, n: int = 16) -> torch.Tensor:
    """``[probe, layer, head, query, key]``: a perfect first-token sink, or uniform causal attention."""
    if kind == "sink":
        w = torch.zeros(n, n)
        w[:, 0] = 1.0
    else:
        w = torch.tril(torch.ones(n, n))
        w = w / w.sum(-1, keepdim=True)
    return w.expand(4, 2, 2, n, n).clone()


def test_measure_weights_on_a_perfect_sink_and_on_uniform_attention():
    sink = controlled.measure_weights(_attention("sink"), causal=True)
    assert sink["formed"] and sink["location"] == ["first token", "first token"]
    assert sink["first_share"] == pytest.approx([1.0, 1.0]) and sink["frame"] == "centralized"
    flat = controlled.measure_weights(_attention("uniform"), causal=True)
    assert not flat["formed"] and flat["location"] == ["none", "none"] and flat["frame"] == "none"
    # sigmoid-like rows that sum to 0.2: measured after normalization, the mass kept apart
    scaled = controlled.measure_weights(0.2 * _attention("sink"), causal=True)
    assert scaled["formed"] and scaled["mass"] == pytest.approx([0.2, 0.2])


def _row(arch: str, position: str, attention: str, seed: int, step: int, share: float, frame: str,
         loss: float, final: bool, sink_step: int | None, loss_step: int | None) -> dict:
    return {"run": f"{arch}-{position}-{attention}-s{seed}", "cell": f"{arch}-{position}-{attention}",
            "architecture": arch, "position": position, "attention": attention, "seed": seed, "step": step,
            "loss": loss, "zero_loss": 1.0, "loss_dropped": loss < 0.5, "first_share": [share, share / 2],
            "first_low": [share - 0.05] * 2,
            "first_high": [share + 0.05] * 2, "last_share": [0.0, 0.0], "mass": [1.0, 1.0],
            "location": ["first token", "none"], "frame": frame, "formed": share - 0.05 > 0.5, "final": final,
            "sink_step": sink_step, "loss_step": loss_step}


def _measured(shares: dict[str, list[float]], frames: dict[str, list[str]], sink_step: int = 64) -> pd.DataFrame:
    rows = []
    for position, per_seed in shares.items():
        for seed, share in enumerate(per_seed):
            for attention in ("softmax", "sigmoid"):
                args = ("decoder", position, attention, seed)
                rows.append(_row(*args, 0, 0.1, "distributed", 1.0, False, sink_step, 128))
                rows.append(_row(*args, 256, share, frames[position][seed], 0.01, True, sink_step, 128))
    return pd.DataFrame(rows)


def test_grid_measures_and_their_nulls_give_the_known_answers():
    measured = _measured({"rope": [0.9, 0.8, 0.85], "rope_1e6": [0.6, 0.7, 0.5], "nope": [0.95, 0.9, 0.9]},
                         {"rope": ["centralized"] * 3, "rope_1e6": ["distributed"] * 3,
                          "nope": ["centralized"] * 3})
    result = controlled.group_results(measured)[0]
    changes = MEASURES["controlled.label_changes"].fn(result, "corrected")
    assert (changes.value, changes.low, changes.high) == (1.0, 1.0, 1.0)  # rope_1e6 changes the label, every seed
    seed_null = NULLS["seed_label_changes"](result, "corrected")
    assert seed_null.high == 0.0  # the labels do not move with the seed
    scaled = MEASURES["controlled.scaled_first_share_change"].fn(result, "corrected")
    # each scheme at each seed is a part (the claim says "in every seed")
    assert [p[0] for p in scaled.parts] == ["rope_1e6 seed 0", "rope_1e6 seed 1", "rope_1e6 seed 2"]
    assert [p[1] for p in scaled.parts] == pytest.approx([(0.6 - 0.9) * 0.75, (0.7 - 0.8) * 0.75, (0.5 - 0.85) * 0.75])
    assert [p[0] for p in changes.parts] == ["seed 0", "seed 1", "seed 2"]
    lag = MEASURES["controlled.sink_lag"].fn(result, "corrected")
    assert lag.value == pytest.approx(math.log2(64 / 128)) and lag.n == 9
    twin = MEASURES["controlled.sink_lag"].fn(result.data["twin"], "corrected")
    assert twin.undetermined  # frozen at step 0: no sink, no loss drop
    assert MEASURES["controlled.label_changes"].fn(result, "faithful") is None


def test_verdicts_on_the_synthetic_grid():
    from sinkframes.verdicts import evaluate

    measured = _measured({"rope": [0.9, 0.8, 0.85], "rope_1e6": [0.6, 0.7, 0.5]},
                         {"rope": ["centralized"] * 3, "rope_1e6": ["distributed"] * 3}, sink_step=512)
    found = {v.claim: v for v in evaluate(controlled.group_results(measured)) if v.question == "holds"}
    assert found["3.4.encoding_decides.trained"].status == SUPPORTED
    assert found["B.early_emergence.trained"].status == NOT_SUPPORTED  # the sink came two doublings late


def test_a_claim_about_every_seed_is_refuted_by_one_seed_instead_of_left_inconclusive():
    from sinkframes.verdicts import evaluate

    # rope_1e6 changes the label in seeds 0 and 1 and not in seed 2: the range over seeds straddles the rule
    measured = _measured({"rope": [0.9, 0.8, 0.85], "rope_1e6": [0.6, 0.7, 0.5]},
                         {"rope": ["centralized"] * 3, "rope_1e6": ["distributed", "distributed", "centralized"]})
    found = {v.claim: v for v in evaluate(controlled.group_results(measured)) if v.question == "holds"}
    assert found["3.4.encoding_decides.trained"].status == NOT_SUPPORTED
