"""The controlled grid: tiny models that differ in one switch, trained on the sink task.

Every run of the grid shares the task (:class:`~sinkframes.training.sink_task.SinkTask`), the sizes
(:class:`~sinkframes.training.tiny.TinyConfig`), the optimizer and its schedule, the number of steps
and, for one seed, the initial weights and the order of the batches. A run differs from another of
the same seed only in its position encoding, its attention normalization, or its mask (causal
decoder or bidirectional encoder). Each run saves its weights on a log scale of steps, in float16,
all checkpoints of one run in one safetensors file, with the training loss of every step in the
run index (``runs.json``).

``python -m sinkframes train-controlled`` trains the grid (two worker processes, one thread each);
``--check`` retrains the first steps of one run of each kind and compares them with the committed
checkpoint bit for bit.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from .reproducible import deterministic_threads
from .sink_task import TASK, SinkTask
from .tiny import POSITIONS, TinyConfig, TinyTransformer, build

CHECKPOINT_DIR = Path(__file__).resolve().parents[1] / "data" / "controlled"
INDEX = "runs.json"
SEEDS = (0, 1, 2)
ARCHITECTURES = ("decoder", "encoder")
#: the normalizations every position encoding is trained with
GRID_ATTENTIONS = ("softmax", "sigmoid")
#: the output-gated control, trained for the standard pairings only (RoPE decoder, learned-table encoder)
GATED = (("decoder", "rope"), ("encoder", "learned"))


@dataclass(frozen=True)
class GridPlan:
    """Everything that decides the weights besides the run's switches (a change here changes every run)."""

    steps: int = 2048
    batch_size: int = 64
    lr: float = 3e-3
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    checkpoints: tuple[int, ...] = (0, 64, 128, 256, 512, 1024, 1536, 2048)
    data_seed_offset: int = 1000


@dataclass(frozen=True)
class RunSpec:
    """One run: the switches and the seed (initial weights ``seed``, batch order ``seed + offset``)."""

    architecture: str
    position: str
    attention: str
    seed: int

    @property
    def name(self) -> str:
        return f"{self.architecture}-{self.position}-{self.attention}-s{self.seed}"

    @property
    def causal(self) -> bool:
        return self.architecture == "decoder"

    @property
    def cell(self) -> str:
        """The grid point without the seed."""
        return f"{self.architecture}-{self.position}-{self.attention}"

    def config(self, task: SinkTask) -> TinyConfig:
        return TinyConfig(task.vocab_size, task.content_dim, position=self.position, attention=self.attention,
                          causal=self.causal, max_len=task.length)


def grid(seeds: Iterable[int] = SEEDS) -> list[RunSpec]:
    """Every run: each position encoding x each grid normalization x each architecture x each seed, and the
    gated control of :data:`GATED`."""
    seeds = tuple(seeds)
    runs = [RunSpec(a, p, n, s) for a in ARCHITECTURES for p in POSITIONS for n in GRID_ATTENTIONS for s in seeds]
    runs += [RunSpec(a, p, "gated", s) for a, p in GATED for s in seeds]
    return runs


def train_run(spec: RunSpec, plan: GridPlan = GridPlan(), task: SinkTask = TASK,
              stop: int | None = None) -> tuple[dict[int, dict[str, torch.Tensor]], list[float], float]:
    """Train one run; return ``({step: float16 state}, training loss per step, seconds)``.

    ``stop`` ends the run early (the check retrains only the first steps); checkpoints past it are absent.
    """
    with deterministic_threads(1):
        return _train(spec, plan, task, stop)


def _train(spec: RunSpec, plan: GridPlan, task: SinkTask, stop: int | None
           ) -> tuple[dict[int, dict[str, torch.Tensor]], list[float], float]:
    model = build(spec.config(task), spec.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=plan.lr, weight_decay=plan.weight_decay)
    data = torch.Generator().manual_seed(spec.seed + plan.data_seed_offset)
    last = plan.steps if stop is None else min(stop, plan.steps)
    saved: dict[int, dict[str, torch.Tensor]] = {}
    losses: list[float] = []
    start = time.perf_counter()
    for step in range(last + 1):
        if step in plan.checkpoints:
            saved[step] = {k: v.detach().to(torch.float16).clone() for k, v in model.state_dict().items()}
        if step == last:
            break
        ids, content = task.sample(plan.batch_size, data)
        prediction, _ = model(ids, content)
        loss = task.loss(prediction, ids, content, spec.causal)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), plan.grad_clip)
        opt.step()
        losses.append(float(loss.detach()))
    return saved, losses, time.perf_counter() - start


def _save(spec: RunSpec, out: Path, plan: GridPlan, task: SinkTask) -> dict[str, Any]:
    """Train ``spec`` and write its checkpoints; return its index entry."""
    from safetensors.torch import save_file

    saved, losses, seconds = train_run(spec, plan, task)
    tensors = {f"step{step}.{k}": v for step, state in saved.items() for k, v in state.items()}
    save_file(tensors, str(out / f"{spec.name}.safetensors"))
    return {**asdict(spec), "name": spec.name, "seconds": round(seconds, 1),
            "train_loss": [round(x, 6) for x in losses]}


def train_grid(out: Path = CHECKPOINT_DIR, runs: list[RunSpec] | None = None, jobs: int = 2,
               plan: GridPlan = GridPlan(), task: SinkTask = TASK) -> Path:
    """Train ``runs`` (default: the whole grid) into ``out``, ``jobs`` at a time; write the run index."""
    out.mkdir(parents=True, exist_ok=True)
    runs = grid() if runs is None else runs
    start = time.perf_counter()
    entries: dict[str, Any] = {}
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for entry in pool.map(_save, runs, [out] * len(runs), [plan] * len(runs), [task] * len(runs)):
            entries[entry["name"]] = entry
            print(f"{entry['name']}: {entry['seconds']} s, final training loss {entry['train_loss'][-1]:.5f}",
                  flush=True)
    index = {"plan": asdict(plan), "task": asdict(task), "torch": torch.__version__, "jobs": jobs,
             "wall_seconds": round(time.perf_counter() - start, 1), "runs": entries}
    (out / INDEX).write_text(json.dumps(index, indent=1) + "\n")
    return out / INDEX


def load_index(folder: Path = CHECKPOINT_DIR) -> dict[str, Any]:
    """The run index, with a clear error when the grid has not been trained into ``folder``."""
    path = folder / INDEX
    if not path.exists():
        raise FileNotFoundError(f"no controlled-grid checkpoints in {folder}: run `python -m sinkframes "
                                f"train-controlled --out {folder}` first")
    return json.loads(path.read_text())


def load_checkpoint(spec: RunSpec, step: int, folder: Path = CHECKPOINT_DIR,
                    task: SinkTask = TASK) -> TinyTransformer:
    """The model of ``spec`` at ``step``, in float32, from the committed float16 weights."""
    from safetensors.torch import load_file

    tensors = load_file(str(folder / f"{spec.name}.safetensors"))
    prefix = f"step{step}."
    state = {k[len(prefix):]: v.float() for k, v in tensors.items() if k.startswith(prefix)}
    if not state:
        raise KeyError(f"{spec.name} has no checkpoint at step {step}")
    model = TinyTransformer(spec.config(task))
    model.load_state_dict(state)
    return model.eval()


def check_kinds() -> list[RunSpec]:
    """One run of each kind (architecture x normalization), the standard position encoding of each."""
    return [RunSpec("decoder", "rope", n, 0) for n in (*GRID_ATTENTIONS, "gated")] + [
        RunSpec("encoder", "learned", n, 0) for n in (*GRID_ATTENTIONS, "gated")]


def float16_steps(a: torch.Tensor, b: torch.Tensor) -> float:
    """The largest difference between two tensors of float16 values, in float16 rounding steps at the larger
    magnitude of each pair (the spacing of float16 numbers there; subnormals share the smallest normal's spacing).
    Another CPU's float32 kernels round differently, which can move a stored float16 weight by one step."""
    a, b = a.float(), b.float()
    magnitude = torch.maximum(a.abs(), b.abs()).clamp_min(2.0**-14)
    spacing = torch.exp2(torch.floor(torch.log2(magnitude)) - 10)  # float16 has 10 fraction bits
    return float(((a - b).abs() / spacing).max())


def check(folder: Path = CHECKPOINT_DIR, step: int = 64, runs: list[RunSpec] | None = None,
          plan: GridPlan | None = None) -> dict[str, tuple[float, float]]:
    """Retrain the first ``step`` steps of each run (under ``plan``, the grid's by default) and compare with the
    committed checkpoint: ``{run: (largest absolute difference, largest difference in float16 steps)}``. ``(0, 0)``
    is bit for bit (the same software and CPU instruction set); at most one step is another CPU's rounding of the
    same training; a changed recipe moves weights by hundreds of steps."""
    from safetensors.torch import load_file

    out = {}
    for spec in check_kinds() if runs is None else runs:
        saved, _, _ = train_run(spec, plan=plan or GridPlan(), stop=step)
        committed = load_file(str(folder / f"{spec.name}.safetensors"))
        pairs = [(v, committed[f"step{step}.{k}"]) for k, v in saved[step].items()]
        out[spec.name] = (max(float((v.float() - c.float()).abs().max()) for v, c in pairs),
                          max(float16_steps(v, c) for v, c in pairs))
    return out
