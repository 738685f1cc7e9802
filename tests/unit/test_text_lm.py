"""The natural-text language model of the sink-recipe search (training.text_lm)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

from sinkframes.training import text_lm as T

DOCS = [(f"doc{i}.txt", f"The function number {i} returns a list of {i % 7} items. " * 20) for i in range(40)]


def test_the_tokenizer_keeps_bos_first_and_windows_start_with_it():
    train, held, vocab, bos = T.token_streams(DOCS, vocab=300)
    assert bos == 0 and vocab <= 300 and train.size > held.size > 0
    assert bos not in set(train.tolist())  # BOS never occurs inside the text
    ids = T.windows(train, torch.Generator().manual_seed(0), 5, 16, bos)
    assert ids.shape == (5, 16) and (ids[:, 0] == bos).all() and (ids[:, 1:] != bos).all()
    raw, _, n, byte_bos = T.token_streams(DOCS, vocab=0)
    assert (n, byte_bos) == (257, 256) and raw.max() < 256


def test_the_probe_reads_the_first_token_share_of_a_known_sink():
    cfg = T.LMRecipe("t", d_model=32, n_heads=2, n_layers=2, d_mlp=32, seq_len=16).config(50)
    model = T.TinyLM(cfg)
    ids = torch.randint(1, 50, (3, 16))
    ids[:, 0] = 0
    # queries and keys set to zero: every row of every head is uniform over the keys it can see
    for block in model.blocks:
        torch.nn.init.zeros_(block.attn.qkv.weight)
    rec = T.probe_shares(model, ids)
    uniform = float(np.mean([1 / (q + 1) for q in range(1, 16)]))
    assert rec["first_share"] == pytest.approx([uniform, uniform], abs=1e-4)
    # a head whose keys all equal a BOS-only direction: the first token takes nearly all the weight
    with torch.no_grad():
        model.embed.weight.zero_()
        model.embed.weight[0, 0] = 1.0
        model.embed.weight[1:, 1] = 1.0
        w = model.blocks[0].attn.qkv.weight  # rows: q (32), k (32), v (32)
        w[0:16, 1] = 30.0  # head 0's query reads the text direction
        w[32:48, 0] = 30.0  # head 0's key reads the BOS direction
    rec = T.probe_shares(model, ids)
    assert rec["head_share"][0][0] > 0.99 and rec["head_share"][0][1] == pytest.approx(uniform, abs=1e-4)
    assert rec["best_head"][0] > 0.99 and rec["first_share"][0] == pytest.approx((rec["best_head"][0] + uniform) / 2,
                                                                                abs=1e-3)


def test_a_short_run_is_deterministic_and_lowers_the_loss():
    train, held, vocab, bos = T.token_streams(DOCS, vocab=300)
    recipe = T.LMRecipe("t", d_model=32, n_heads=2, n_layers=2, d_mlp=64, seq_len=32, batch_size=8, steps=30,
                        warmup=5)
    _, a = T.train_lm(recipe, train, held, vocab, bos, probe_every=10, progress=None)
    _, b = T.train_lm(recipe, train, held, vocab, bos, probe_every=10, progress=None)
    strip = [{k: v for k, v in r.items() if k not in ("wall", "cpu")} for r in a]
    assert strip == [{k: v for k, v in r.items() if k not in ("wall", "cpu")} for r in b]
    assert [r["step"] for r in a] == [0, 10, 20, 30] and a[-1]["loss"] < a[0]["loss"]


def test_a_run_made_in_pieces_from_its_saved_state_equals_one_uninterrupted_run(tmp_path):
    train, held, vocab, bos = T.token_streams(DOCS, vocab=300)
    recipe = T.LMRecipe("t", d_model=32, n_heads=2, n_layers=2, d_mlp=64, seq_len=32, batch_size=8, steps=30,
                        warmup=5)
    whole, straight = T.train_lm(recipe, train, held, vocab, bos, probe_every=10, progress=None)
    state, log = tmp_path / "t.pt", tmp_path / "log.jsonl"
    pieces: list[dict] = []
    for _ in range(5):  # each piece stops at its first probe: steps 0, 10, 20, 30, then nothing is left
        model, new = T.train_lm(recipe, train, held, vocab, bos, probe_every=10, progress=None, checkpoint=state,
                                stop_after_s=0.0, log=log)
        pieces += new
    strip = [{k: v for k, v in r.items() if k not in ("wall", "cpu")} for r in pieces]
    assert strip == [{k: v for k, v in r.items() if k not in ("wall", "cpu")} for r in straight]
    assert all(torch.equal(a, b) for a, b in zip(whole.state_dict().values(), model.state_dict().values(),
                                                 strict=True))
    assert [r["cpu"] for r in pieces] == sorted(r["cpu"] for r in pieces)  # CPU seconds add up across pieces
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    resumes = [x for x in lines if "resumed_at" in x]
    assert [x["resumed_at"] for x in resumes] == [0, 10, 20, 30] and all(x["probe_reproduced"] for x in resumes)
    assert [x["step"] for x in lines if "step" in x] == [0, 10, 20, 30]  # no probe logged twice
    # a state saved before the probe measured every head is still checked on the fields it has
    early = tmp_path / "early.pt"
    T.train_lm(recipe, train, held, vocab, bos, probe_every=10, progress=None, checkpoint=early, stop_after_s=0.0)
    saved = torch.load(early, weights_only=True)
    del saved["record"]["head_share"]
    torch.save(saved, early)
    T.train_lm(recipe, train, held, vocab, bos, probe_every=10, progress=None, checkpoint=early, stop_after_s=0.0,
               log=log)
    assert json.loads(log.read_text().splitlines()[-2]) == {"recipe": "t", "resumed_at": 0, "probe_reproduced": True,
                                                            "torch": torch.__version__}
    other = recipe.with_(lr=1e-2)
    with pytest.raises(ValueError, match="holds a run of"):
        T.train_lm(other, train, held, vocab, bos, progress=None, checkpoint=state)


def test_training_leaves_the_callers_torch_settings_as_they_were():
    threads = torch.get_num_threads()
    train, held, vocab, bos = T.token_streams(DOCS, vocab=0)
    T.train_lm(T.LMRecipe("t", d_model=16, n_heads=1, n_layers=1, d_mlp=16, seq_len=16, batch_size=2, steps=2,
                          warmup=1), train, held, vocab, bos, progress=None)
    assert torch.get_num_threads() == threads and not torch.are_deterministic_algorithms_enabled()


def test_the_search_log_reads_back_into_a_table_that_says_whether_a_sink_formed(tmp_path):
    import json

    from sinkframes.report import controlled as R

    log = tmp_path / "scouts.jsonl"
    hot = T.BASE.with_(name="hot", lr=1e-2, steps=500)
    lines = [{"recipe": "base", "config": T.recipe_dict(T.BASE), "train_tokens": 10, "torch": "x"},
             {"recipe": "base", "step": 0, "loss": 8.0, "first_share": [0.03, 0.04], "best_head": [0.04, 0.05],
              "wall": 0, "cpu": 0},
             {"recipe": "base", "resumed_at": 0, "probe_reproduced": True, "torch": "x"},
             {"recipe": "base", "step": 250, "loss": 5.0, "first_share": [0.05, 0.2], "best_head": [0.1, 0.6],
              "wall": 60, "cpu": 120},
             {"recipe": "hot", "config": T.recipe_dict(hot), "train_tokens": 10, "torch": "x"},
             {"recipe": "hot", "step": 250, "loss": 4.0, "first_share": [0.7, 0.1], "best_head": [0.9, 0.2],
              "wall": 60, "cpu": 60},
             {"recipe": "hot", "step": 500, "loss": 4.0, "first_share": [0.6, 0.1], "best_head": [0.9, 0.2],
              "head_share": [[0.9, 0.3], [0.2, 0.0]], "wall": 60, "cpu": 60}]
    log.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    heads, records = T.load_scouts(log)
    assert set(heads) == {"base", "hot"} and len(records) == 8  # a continuation line is no probe
    assert [r["resumed_at"] for r in heads["base"]["resumes"]] == [0] and heads["hot"]["resumes"] == []
    table = R.scout_table(heads, records).set_index("recipe")
    assert table.loc["base", "changes"] == "none (the base recipe)"
    assert table.loc["hot", "changes"] == "steps 500, lr 0.01"  # in the order of the recipe's fields
    assert table.loc["base", "steps"] == "250 of 4000 (stopped), in 2 pieces"
    assert table.loc["hot", "steps"] == 500
    # heads counted at the last probe that measured them: 0.3 itself is not above 0.3
    counted = "heads above 0.3 (step)"
    assert table.loc["hot", counted] == "1 of 4 (500)" and table.loc["base", counted] == ""
    assert R.sink_heads(records[records["recipe"] == "hot"], eps=0.1) == (500, 3, 4)
    differed = {**heads, "base": {**heads["base"], "resumes": [{"resumed_at": 0, "probe_reproduced": False}]}}
    assert R.scout_table(differed, records).set_index("recipe").loc["base", "steps"].endswith(
        "in 2 pieces (a continued probe differed)")
    assert table.loc["base", "largest layer share"] == 0.2 and table.loc["base", "largest head share"] == 0.6
    assert table.loc["base", "layer share at the end"] == 0.2 and table.loc["hot", "layer share at the end"] == 0.6
    assert not table.loc["base", "sink formed"] and table.loc["hot", "sink formed"]
    assert table.loc["base", "CPU-minutes"] == 2.0
    assert R.uniform_first_share(2) == 0.5 and abs(R.uniform_first_share(128) - 0.0349) < 1e-4
    crossing = "layer 0, step 250, 1 CPU-minutes"
    assert table.loc["hot", "sink formed at"] == crossing and table.loc["base", "sink formed at"] == ""
    assert "under 1 of 2 recipes: hot (layer 0, step 250, 1 CPU-minutes)" in R.scout_summary(table.reset_index())
    none = R.scout_summary(table.reset_index().iloc[:1])
    assert "No recipe formed a first-token sink" in none and "0.200 (base)" in none
    assert "against 0.035 for uniform attention over its window" in none and "head by head" not in none
    counted = R.scout_summary(table.reset_index(), records)
    assert "the most is 1 of 4 heads (25%; hot at step 500)" in counted
    wide = T.BASE.with_(name="wide", seq_len=256)
    table = R.scout_table({"wide": {"config": T.recipe_dict(wide)}}, records.assign(recipe="wide"))
    assert abs(table["uniform share"].iloc[0] - R.uniform_first_share(256)) < 1e-12  # each recipe's own window
    base_rows = records[records["recipe"] == "base"]
    low = base_rows.assign(recipe="wide", first_share=base_rows["first_share"] * 1.5)  # largest 0.3
    both = pd.concat([R.scout_table(heads, base_rows), R.scout_table({"wide": {"config": T.recipe_dict(wide)}}, low)])
    assert R.scout_uniform_shares({**heads, "wide": {"config": T.recipe_dict(wide)}}) == {
        128: R.uniform_first_share(128), 256: R.uniform_first_share(256)}
    takeaway = R.scout_takeaway(both)  # base (128 tokens, 0.2) and wide (256 tokens, 0.3): wide is the larger
    assert "(wide)" in takeaway and f"{R.uniform_first_share(256):.3f}" in takeaway and "over its window" in takeaway


def test_extra_training_text_leaves_the_held_out_windows_as_they_were(tmp_path):
    kernel = [(f"k{i}.rst", "The driver probes the device and maps its registers. " * 10) for i in range(5)]
    train, held, _, _ = T.token_streams(DOCS, vocab=0)
    more, held_more, _, _ = T.token_streams(DOCS, vocab=0, extra=kernel)
    assert np.array_equal(held, held_more) and more.size == train.size + sum(len(t) for _, t in kernel)
    recipe = T.BASE.with_(name="k", text="python+kernel")
    assert T.recipe_dict(recipe)["text"] == "python+kernel" and "text" not in T.recipe_dict(T.BASE)
    assert T.changes_from_base(T.recipe_dict(recipe)) == "text python+kernel"
    with pytest.raises(ValueError, match="kernel documentation"):
        T.scout(recipe, DOCS, tmp_path / "log.jsonl", progress=None)
    with pytest.raises(ValueError, match="unknown text"):
        T.BASE.with_(text="wikipedia")


def test_the_kernel_documentation_reader_skips_translations_and_unpacks_gzip(tmp_path):
    import gzip

    from sinkframes.training.emergence import TrainingError
    from sinkframes.training.kernel_docs import read_kernel_docs

    (tmp_path / "PCI").mkdir()
    (tmp_path / "translations" / "it_IT").mkdir(parents=True)
    (tmp_path / "PCI" / "pci.rst.gz").write_bytes(gzip.compress(b"How to write PCI drivers"))
    (tmp_path / "index.rst").write_text("The kernel's documentation")
    (tmp_path / "translations" / "it_IT" / "index.rst.gz").write_bytes(gzip.compress(b"La documentazione"))
    (tmp_path / "conf.py.gz").write_bytes(gzip.compress(b"project = 'kernel'"))
    assert read_kernel_docs(tmp_path) == [("PCI/pci.rst", "How to write PCI drivers"),
                                          ("index.rst", "The kernel's documentation")]
    (tmp_path / "empty").mkdir()
    with pytest.raises(TrainingError, match="no .rst"):
        read_kernel_docs(tmp_path / "empty")


def test_the_search_figure_gives_each_of_many_recipes_its_own_colour():
    import matplotlib

    matplotlib.use("Agg")
    from sinkframes.figures.controlled import scout_curves

    names = [f"r{i}" for i in range(14)]  # more recipes than a ten-colour cycle has colours
    records = pd.DataFrame([{"recipe": n, "step": s, "cpu": 60.0 * s, "loss": 5.0, "layer": 0,
                             "first_share": 0.01 * i + 0.001 * s, "best_head": 0.02 * i}
                            for i, n in enumerate(names) for s in (0, 1)])
    fig = scout_curves(records, {128: 0.035})
    for ax in fig.axes[:2]:
        lines = [ln for ln in ax.get_lines() if ln.get_label() in names]
        assert [ln.get_label() for ln in lines] == names
        assert len({matplotlib.colors.to_hex(ln.get_color()) for ln in lines}) == len(names)
        assert [float(ln.get_ydata()[-1]) for ln in lines][:2] == pytest.approx(
            [0.001, 0.011] if ax is fig.axes[0] else [0.0, 0.02])
    assert [t.get_text() for t in fig.legends[0].get_texts()] == names
