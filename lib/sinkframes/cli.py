"""Command line of the installed library: ``python -m sinkframes {models,info,sinks,train-emergence,
train-controlled,scout-text-lm}``. The book's build (``build``, ``toc``, ``standin-hub``) is not part of the
installed package: it runs from a clone of the repository as ``python -m sinkframes_build``, which adds those
commands to these.

The interface is stable because other tools call it; ``sinks --json`` prints
``{"model", "n_sentences", "frame", "layers": [{"layer", "first_token_share", "last_token_share",
"sink_concentration"}]}`` where ``sink_concentration`` is the mean over sentences and heads of the
largest share of queries that put their strongest weight on one same key.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

#: the build's commands (``sinkframes_build.cli``), named here only to point a reader to the repository
BUILD_COMMANDS = ("build", "toc", "standin-hub")
BUILD_ELSEWHERE = ("`{command}` builds the book and runs from a clone of the repository, not from the installed "
                   "package: git clone the repository, then `make book` (or `python -m sinkframes_build {command} "
                   "...` inside the clone)")


def _cmd_models(args: argparse.Namespace) -> int:
    from .models import known_refs

    rows = known_refs()
    if args.verify:
        return _verify_offline(rows)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for r in rows:
        state = {True: "installed", False: "not installed", None: "hub"}[r["installed"]]
        hint = f"  ({r['install']})" if r["install"] and r["installed"] is False else ""
        print(f"{r['ref']:<34} {r['kind']:<8} {state:<14} {r['model']}{hint}")
    return 0


def _verify_offline(rows: list[dict[str, Any]]) -> int:
    """Check every installed offline model's files against the registry's pinned hashes; 1 if one fails."""
    from .models import OFFLINE_MODELS, ModelLoadError
    from .models.gguf import verify_package

    failed = 0
    for r in rows:
        if r["kind"] != "offline" or not r["installed"]:
            continue
        try:
            print(f"{r['ref']:<10} ok: {verify_package(OFFLINE_MODELS[r['ref']])}")
        except ModelLoadError as exc:
            failed += 1
            print(f"{r['ref']:<10} FAILED: {exc}")
    return 1 if failed else 0


def _cmd_info(args: argparse.Namespace) -> int:
    from .models import load

    lm = load(args.ref, dtype=args.dtype, device=args.device, revision=args.revision)
    print(lm.record.to_json())
    return 0


def _cmd_sinks(args: argparse.Namespace) -> int:
    from . import corpus, extraction
    from .analyses.frames import analyse_model, to_json

    if args.csv is not None and args.dataset != "paper":
        raise corpus.DatasetError("--csv is only read with --dataset paper; add --dataset paper or drop --csv")
    texts = corpus.sample_sentences(args.n, seed=args.seed, dataset=args.dataset, csv_path=args.csv)["text"].tolist()
    before = extraction.STATS["forward_passes"]
    res = analyse_model(
        args.ref,
        texts,
        seed=args.seed,
        batch_size=args.batch_size,
        max_length=args.max_length,
        bos_policy=args.bos,
        dtype=args.dtype,
        device=args.device,
        revision=args.revision,
        progress=not args.json,
    )
    ran = extraction.STATS["forward_passes"] - before
    done = "cache hit: no forward pass" if res.from_cache else f"{ran} forward passes"
    print(f"[sinkframes] {done}", file=sys.stderr)
    if args.json:
        print(json.dumps(to_json(res), indent=2, allow_nan=False))
        return 0
    print(f"{res.ref}: {res.n_sentences} sentences, frame {res.data['frame']} ({res.data['reason']})")
    print(f"{'layer':>5} {'first':>7} {'last':>7} {'conc.':>7}")
    for r in res.layers.itertuples():
        print(f"{r.layer:>5} {r.first_token_share:7.3f} {r.last_token_share:7.3f} {r.sink_concentration:7.3f}")
    return 0


def _cmd_train_emergence(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .training import emergence as em

    out = Path(args.out) if args.out else em.CHECKPOINT_DIR
    text_dir = Path(args.text_dir) if args.text_dir else None
    plan = em.TrainingPlan()
    if args.check:
        step, _ = em.check_training(out, plan, upto=args.check_steps, text_dir=text_dir)
        print(f"step{step}: retrained weights equal the committed checkpoint in {out} bit-for-bit")
        return 0
    log = em.run_training(out, plan, text_dir=text_dir)
    print(f"trained {plan.steps} steps into {out}: {log.cpu_seconds / 60:.1f} CPU-minutes, "
          f"{log.wall_seconds / 60:.1f} minutes wall")
    return 0


def _cmd_train_controlled(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .training import controlled as grid

    out = Path(args.out) if args.out else grid.CHECKPOINT_DIR
    if args.check:
        diffs = grid.check(out, step=args.check_steps)
        for name, (d, steps) in diffs.items():
            said = ("equal bit for bit" if d == 0.0 else
                    f"differs by up to {d:.3g}, {steps:g} float16 rounding step(s)"
                    + (" (another CPU's rounding of the same training)" if steps <= 1 else " (not the same training)"))
            print(f"{name}: step{args.check_steps} {said}")
        return 1 if any(steps > 1 for _, steps in diffs.values()) else 0
    index = grid.train_grid(out, jobs=args.jobs)
    print(f"trained {len(grid.grid())} runs into {out} (index: {index})")
    return 0


def _cmd_scout_text_lm(args: argparse.Namespace) -> int:
    import tempfile
    from pathlib import Path

    from .config import cache_root
    from .training import emergence as em
    from .training import kernel_docs, text_lm

    logs = {text_lm.SCOUT_LOG: text_lm.SCOUTS, text_lm.GRID_LOG: text_lm.GRID,
            text_lm.FORMATION_LOG: {**text_lm.FORMATION, **text_lm.LONG}}
    recipes = {name: r for group in logs.values() for name, r in group.items()}
    unknown = [r for r in args.recipes if r not in recipes]
    if unknown:
        raise ValueError(f"unknown recipe(s) {unknown}; choose from {sorted(recipes)}")
    named = {path for path, group in logs.items() if any(r in group for r in args.recipes)}
    if len(named) > 1:
        raise ValueError("name recipes of one log only (the search, the grid, or the formation test's runs): "
                         "they keep separate logs")
    default_log = named.pop()
    log = Path(args.log) if args.log else default_log
    # the grid's runs and the formation test's measure their frame labels and intervals at every probe
    extra = None
    if default_log != text_lm.SCOUT_LOG:
        from .analyses.text_grid import probe_fields
        extra = probe_fields
    states = Path(args.checkpoint_dir) if args.checkpoint_dir else cache_root() / "text_lm"
    if args.fresh:
        for name in args.recipes:
            (states / f"{name}.pt").unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        docs = em.default_text(Path(args.text_dir) if args.text_dir else None, Path(tmp))
        kernel: list[tuple[str, str]] = []
        if any(recipes[name].text == "python+kernel" for name in args.recipes):
            kernel = (kernel_docs.read_kernel_docs(Path(args.kernel_dir)) if args.kernel_dir
                      else kernel_docs.fetch_kernel_docs(Path(tmp) / "kernel"))
    stop = None if args.minutes is None else 60.0 * args.minutes
    for name in args.recipes:
        text_lm.scout(recipes[name], docs, log, checkpoint=states / f"{name}.pt", stop_after_s=stop,
                      kernel=kernel, extra=extra)
    print(f"probe records appended to {log}; each run's state is in {states}")
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m sinkframes",
                                description="The library's commands (the book's build runs from a clone: "
                                            "python -m sinkframes_build).")
    add_commands(p.add_subparsers(dest="command", required=True))
    return p


def add_commands(sub: Any) -> None:  # noqa: PLR0915  # long: one add_argument per option, read as the help is
    """Add the library's commands to the subparsers ``sub`` (the build's command line adds its own beside them)."""
    m = sub.add_parser("models", help="every known model reference, installed or not")
    m.add_argument("--json", action="store_true")
    m.add_argument("--verify", action="store_true",
                   help="check the installed offline models' files against their pinned sha256 (nothing converted)")
    m.set_defaults(func=_cmd_models)

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--dtype", default="float32")
    common.add_argument("--device", default="auto")
    common.add_argument("--revision", default=None, help="hub revision (e.g. a Pythia checkpoint step)")

    i = sub.add_parser("info", parents=[common], help="the model record as JSON")
    i.add_argument("ref")
    i.set_defaults(func=_cmd_info)

    s = sub.add_parser("sinks", parents=[common], help="per-layer sink shares over N sentences")
    s.add_argument("ref")
    s.add_argument("--n", type=int, default=50)
    s.add_argument("--dataset", choices=["embedded", "paper"], default="embedded")
    s.add_argument(
        "--csv", default=None, help="path or URL of the paper's wiki_dataset_sink.csv (with --dataset paper)"
    )
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--batch-size", type=int, default=16)
    s.add_argument("--max-length", type=int, default=256)
    s.add_argument(
        "--bos",
        choices=["default", "force"],
        default="default",
        help="keep the tokenizer's start token convention or force a BOS",
    )
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=_cmd_sinks)

    e = sub.add_parser(
        "train-emergence",
        help="train the small Llama-architecture model whose checkpoints the emergence page reads "
        "(--check: retrain the start and compare with the committed checkpoint)",
    )
    e.add_argument("--out", default=None, help="checkpoint folder (default: the one the package ships)")
    e.add_argument("--text-dir", default=None, help="unpacked documentation sources instead of apt-get download")
    e.add_argument("--check", action="store_true")
    e.add_argument("--check-steps", type=int, default=256, help="with --check: retrain up to this step")
    e.set_defaults(func=_cmd_train_emergence)

    c = sub.add_parser(
        "train-controlled",
        help="train the controlled grid of tiny models on the sink task (chapter 9); --check: retrain the first "
             "steps of one run of each kind and compare with the committed checkpoints",
    )
    c.add_argument("--out", default=None, help="checkpoint folder (default: the one the package ships)")
    c.add_argument("--jobs", type=int, default=2, help="runs trained at a time, one thread each")
    c.add_argument("--check", action="store_true")
    c.add_argument("--check-steps", type=int, default=64, choices=[64, 128, 256],
                   help="with --check: retrain up to this checkpoint")
    c.set_defaults(func=_cmd_train_controlled)

    st = sub.add_parser(
        "scout-text-lm",
        help="train recipes of the natural-text language model and record its first-token share every 250 steps "
             "(the search for a recipe that forms a sink); each run's state is saved at every probe and a run "
             "started again continues from it",
    )
    st.add_argument("recipes", nargs="+",
                    help="recipe names (training.text_lm.SCOUTS), runs of the position-encoding grid "
                         "(training.text_lm.GRID: grid-<position>-s<seed>, logged to their own log), or runs of "
                         "the formation test (training.text_lm.FORMATION and LONG, logged to formation.jsonl)")
    st.add_argument("--log", default=None, help="the JSON-lines log (default: the one the package ships)")
    st.add_argument("--text-dir", default=None, help="unpacked documentation sources instead of apt-get download")
    st.add_argument("--kernel-dir", default=None,
                    help="the kernel's unpacked Documentation folder, for recipes that train on it (instead of "
                         "apt-get download)")
    st.add_argument("--checkpoint-dir", default=None,
                    help="where each run's state is kept, as <recipe>.pt (default: SINKFRAMES_CACHE/text_lm)")
    st.add_argument("--minutes", type=float, default=None,
                    help="stop each run at its first probe after this many minutes (its state saved, to continue "
                         "later)")
    st.add_argument("--fresh", action="store_true", help="discard the recipes' saved states and start at step 0")
    st.set_defaults(func=_cmd_scout_text_lm)


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    if given and given[0] in BUILD_COMMANDS:
        print(f"error: {BUILD_ELSEWHERE.format(command=given[0])}", file=sys.stderr)
        return 2
    return run(parser().parse_args(given))


def run(args: argparse.Namespace) -> int:
    """Run the parsed command; the library's own errors become one line on stderr and exit status 2."""
    from .corpus import DatasetError
    from .extraction import NonFiniteAttentionError, TextError
    from .models import AttentionUnavailableError, ModelLoadError
    from .training.emergence import TrainingError

    try:
        from .threads import configure

        configure()  # torch and BLAS share one thread count (SINKFRAMES_THREADS overrides)
        return int(args.func(args) or 0)
    except (ModelLoadError, AttentionUnavailableError, DatasetError, TextError, TrainingError, ValueError,
            NonFiniteAttentionError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
