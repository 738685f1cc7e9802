"""A sentence's threshold graphs split over helper processes (``metrics.graph_workers``): the same values as
in one process (the degree statistics and the ARPACK answers bit for bit, the dense eigenvalues up to
LAPACK's rounding, which depends on where each matrix lies in memory); a helper that dies costs only time."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sinkframes.metrics import graph_workers as gw
from sinkframes.metrics import graphs as g
from sinkframes.threads import single_torch_thread


def _attention(seed: int, layers: int, n: int, causal: bool, symmetric_layers: tuple[int, ...] = ()) -> torch.Tensor:
    """Seeded head-averaged attention ``[layer, query, key]`` with a sink column, quantized to multiples of
    0.001; the ``symmetric_layers`` have pairs that pass both ways."""
    gen = torch.Generator().manual_seed(seed)
    logits = 2.0 * torch.randn(layers, n, n, generator=gen)
    for layer in symmetric_layers:
        logits[layer] = logits[layer] + logits[layer].T
    logits[..., 0] += 3.0
    if causal:
        logits = logits.masked_fill(~torch.tril(torch.ones(n, n, dtype=torch.bool)), float("-inf"))
    else:  # bidirectional but one-way outside the symmetric layers: each pair passes in one direction only
        upper = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
        for layer in range(layers):
            if layer not in symmetric_layers:
                logits[layer] = logits[layer].masked_fill(upper, -30.0)
    return torch.round(torch.softmax(logits, -1) * 1000) / 1000


#: metrics that come from the dense ``eigvalsh`` (rounding of the order of 1e-14 between batch layouts)
_DENSE_SPECTRAL = ("corrected/lambda2", "corrected/lambda2_norm", "corrected/spectral_gap", "fiedler/fiedler")


def _assert_same(new: dict[str, torch.Tensor], old: dict[str, torch.Tensor]) -> None:
    """Equal keys, shapes and NaNs; the dense spectra within 1e-12, everything else bit for bit (the
    laplacian variant's Fiedler value and gap come from ARPACK above 50 tokens, dense below; within 1e-12)."""
    assert list(new) == list(old)
    for k in old:
        assert new[k].dtype == old[k].dtype and new[k].shape == old[k].shape, k
        assert torch.equal(new[k].isnan(), old[k].isnan()), k
        if k in _DENSE_SPECTRAL or k in ("laplacian/fiedler", "laplacian/spectral_gap"):
            torch.testing.assert_close(new[k].nan_to_num(), old[k].nan_to_num(), rtol=0, atol=1e-12, msg=k)
        else:
            assert torch.equal(new[k].nan_to_num(), old[k].nan_to_num()), k


@pytest.fixture(autouse=True)
def _fresh_helpers():
    yield
    gw._HELPERS.close()
    gw._HELPERS.failed = False


@pytest.mark.parametrize(("causal", "symmetric"), [(True, ()), (False, (1,)), (False, ())])
def test_split_over_a_helper_equals_one_process(causal, symmetric):
    """Graphs 0, 2, 4 here and 1, 3 in the helper. In the bidirectional case only layer 1 (the helper's) has
    pairs passing both ways: this process's share alone would take the one-way shortcut, so the sentence-wide
    choice must reach it."""
    att = _attention(5, 5, 56, causal, symmetric)  # above 50 tokens: ARPACK on the disconnected graphs
    with single_torch_thread():
        whole = g.sentence_graph_metrics(att, causal)
        split = gw.SplitGraphMetrics(att, causal, g.ALL_THRESHOLDS, helpers=1).result()
    _assert_same(split, whole)
    assert g.one_way_only(att, min(g.ALL_THRESHOLDS)) == (not symmetric)
    assert g.one_way_only(att[0::2], min(g.ALL_THRESHOLDS))  # the share that would have decided alone


def test_a_helper_that_dies_is_replaced_by_this_process():
    att = _attention(8, 4, 53, True)
    with single_torch_thread():
        whole = g.sentence_graph_metrics(att, True)
        job = gw.SplitGraphMetrics(att, True, g.ALL_THRESHOLDS, helpers=1)
        ((_, ticket),) = job.sent
        worker = ticket.worker
        worker.proc.kill()
        worker.proc.wait()
        with pytest.warns(RuntimeWarning, match="helper process failed"):
            split = job.result()
        _assert_same(split, whole)
        assert gw._HELPERS.get(1) == []  # none is started again: what failed would fail on every sentence
        again = gw.SplitGraphMetrics(att, True, g.ALL_THRESHOLDS, helpers=1)
        assert again.sent == []
        _assert_same(again.result(), whole)


def _count_splits(monkeypatch) -> list[int]:
    """The ``helpers`` argument of every ``SplitGraphMetrics`` created from now on, in order."""
    calls: list[int] = []
    real = gw.SplitGraphMetrics.__init__

    def counting(self, att, causal, thresholds, helpers=None):
        calls.append(helpers)
        real(self, att, causal, thresholds, helpers)

    monkeypatch.setattr(gw.SplitGraphMetrics, "__init__", counting)
    return calls


def test_the_reducer_splits_only_long_sentences_and_gives_what_one_thread_gives(monkeypatch):
    """With two threads the reducer hands half the layers of a sentence above 50 tokens to a helper; the
    values equal the one-thread computation. Shorter sentences stay in this process."""
    calls = _count_splits(monkeypatch)
    gen = torch.Generator().manual_seed(2)
    reducer = g.SpectralReducer()
    for n in (20, 57):
        logits = torch.randn(4, 3, n, n, generator=gen)
        logits[..., 0] += 3.0
        att = torch.softmax(logits.masked_fill(~torch.tril(torch.ones(n, n, dtype=torch.bool)), float("-inf")), -1)
        before = torch.get_num_threads()
        try:
            torch.set_num_threads(1)
            alone = reducer(att, True)
            torch.set_num_threads(2)
            shared = reducer(att, True)
        finally:
            torch.set_num_threads(before)
        _assert_same(shared, alone)
    assert calls == [0, 0, 0, 1]  # a helper only for the 57-token sentence with two threads


def test_csr_arrays_from_a_dense_matrix_are_the_constructors():
    from scipy.sparse import csr_matrix

    from sinkframes.metrics.arpack import csr_parts, eigsh_smallest, eigsh_smallest_dense

    rng = np.random.default_rng(1)
    dense = np.where(rng.random((57, 57)) > 0.8, rng.standard_normal((57, 57)), 0.0)
    dense[3] = 0.0  # an empty row
    dense = dense + dense.T
    m = csr_matrix(dense)
    for got, want in zip(csr_parts(dense), (m.indptr, m.indices, m.data), strict=True):
        assert got.dtype == want.dtype and np.array_equal(got, want)
    v0 = g.arpack_start(57)
    assert np.array_equal(eigsh_smallest_dense(dense, 3, v0), eigsh_smallest(m, 3, v0))


def _eigsh_takes_rng() -> bool:
    from sinkframes.metrics import arpack

    return arpack._eigsh_takes_rng()


@pytest.mark.skipif(not _eigsh_takes_rng(), reason="SciPy < 1.17: eigsh takes no generator for ARPACK's restarts")
def test_arpack_restarts_from_a_seeded_generator():
    """On a graph whose Krylov space runs out (two edges among 60 nodes), ARPACK asks for new random start
    vectors. ``eigsh`` draws them from the operating system's entropy, so its raw answers differ from call
    to call; the book's call draws them from ``RESTART_SEED`` and repeats, equal to ``eigsh`` given that seed."""
    import scipy.sparse.linalg as sla
    from scipy.sparse import csr_matrix

    from sinkframes.metrics.arpack import RESTART_SEED, eigsh_smallest

    n = 60
    b = np.zeros((n, n))
    b[1, 0] = b[2, 0] = 1.0
    w = 0.5 * (b + b.T)
    m = csr_matrix(np.diag(w.sum(1)) - w)
    v0 = g.arpack_start(n)
    unseeded = {tuple(sla.eigsh(m, k=3, which="SM", v0=v0, return_eigenvectors=False)) for _ in range(4)}
    assert len(unseeded) > 1  # the case does exercise the random restarts
    ours = {tuple(eigsh_smallest(m, 3, v0)) for _ in range(4)}
    assert len(ours) == 1
    seeded = sla.eigsh(m, k=3, which="SM", v0=v0, return_eigenvectors=False, rng=np.random.default_rng(RESTART_SEED))
    assert ours == {tuple(seeded)}


def test_an_interrupt_is_left_to_the_parent():
    """A notebook kernel's shutdown (or Ctrl-C) sends SIGINT to the process group; a helper ignores it and
    keeps answering until its parent ends it."""
    import signal

    (worker,) = gw._HELPERS.get(1)
    worker.wait_ready()
    worker.proc.send_signal(signal.SIGINT)
    att = _attention(4, 3, 52, True)
    with single_torch_thread():
        job = gw.SplitGraphMetrics(att, True, g.ALL_THRESHOLDS, helpers=1)
        assert [t.worker for _, t in job.sent] == [worker]
        _assert_same(job.result(), g.sentence_graph_metrics(att, True))
    assert worker.alive() and not gw._HELPERS.failed


def _sentences(lengths: tuple[int, ...], seed: int = 11) -> list[torch.Tensor]:
    """Seeded causal attention ``[layer, head, n, n]`` per sentence, with a sink column."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for n in lengths:
        logits = 2.0 * torch.randn(4, 3, n, n, generator=gen)
        logits[..., 0] += 3.0
        future = ~torch.tril(torch.ones(n, n, dtype=torch.bool))
        out.append(torch.softmax(logits.masked_fill(future, float("-inf")), -1))
    return out


def _two_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    return before


def test_streamed_sentences_go_whole_to_the_helper_and_give_what_one_thread_gives(monkeypatch):
    """With two threads, ``SpectralReducer.stream`` sends whole sentences (short and above 50 tokens) to a helper
    while this process computes others; every index comes back once, with the one-thread values."""
    atts = _sentences((12, 30, 57, 8, 25, 52, 40, 19, 33, 3))
    reducer = g.SpectralReducer()
    with single_torch_thread():
        alone = [reducer(a, True) for a in atts]
    sent: list[int] = []
    real = gw._Worker.submit

    def counting(self, fn, *args):
        sent.append(args[1].shape[-1])
        return real(self, fn, *args)

    monkeypatch.setattr(gw._Worker, "submit", counting)
    before = _two_threads()
    try:
        got = list(reducer.stream(enumerate(atts), True))
    finally:
        torch.set_num_threads(before)
    assert sorted(i for i, _ in got) == list(range(len(atts)))
    for i, res in got:
        _assert_same(res, alone[i])
    assert 0 < len(sent) < len(atts)  # some sentences in the helper, the others here
    assert torch.get_num_threads() == before


def test_a_stream_survives_its_helper_dying():
    # four sentences queue in the helper; the fifth, computed here while it works, is tiny: the helper is still busy
    atts = _sentences((45, 45, 45, 45, 3, 22), seed=3)
    reducer = g.SpectralReducer(per_head=False)
    with single_torch_thread():
        alone = [reducer(a, True) for a in atts]
    before = _two_threads()
    try:
        stream = reducer.stream(enumerate(atts), True)
        first = next(stream)
        for worker in gw._HELPERS.get(1):
            worker.proc.kill()
            worker.proc.wait()
        with pytest.warns(RuntimeWarning, match="helper process failed"):
            rest = list(stream)
    finally:
        torch.set_num_threads(before)
    got = dict([first, *rest])
    assert sorted(got) == list(range(len(atts)))
    for i, res in got.items():
        _assert_same(res, alone[i])
    assert gw._HELPERS.failed


def test_a_sentence_larger_than_a_queue_is_computed_here_and_split(monkeypatch):
    """An item above ``QUEUE_BYTES`` is never queued; it is computed here with every thread, so the reducer splits
    a sentence above 50 tokens over the helper by layers."""
    monkeypatch.setattr(gw, "QUEUE_BYTES", 1000)
    splits = _count_splits(monkeypatch)
    atts = _sentences((55, 20), seed=5)
    reducer = g.SpectralReducer()
    with single_torch_thread():
        alone = [reducer(a, True) for a in atts]
    before = _two_threads()
    try:
        got = dict(reducer.stream(enumerate(atts), True))
    finally:
        torch.set_num_threads(before)
    assert splits[-2:] == [1, 0]  # the 55-token sentence split over one helper; the 20-token one not
    for i, res in got.items():
        _assert_same(res, alone[i])


class _LateTicket:
    """A ticket whose answer arrives between the first and second look at it: ``ready()`` is False once, then True."""

    def __init__(self, value: torch.Tensor) -> None:
        self.value, self.looks = value, 0

    def ready(self) -> bool:
        self.looks += 1
        return self.looks > 1

    def result(self) -> dict[str, torch.Tensor]:
        return {"x": self.value}


class _FakeWorker:
    """A helper that answers nothing by itself: every job becomes a :class:`_LateTicket`."""

    def __init__(self) -> None:
        self.waiting: list[_LateTicket] = []

    def queued_bytes(self) -> int:
        return 0

    def submit(self, fn, *args) -> _LateTicket:
        ticket = _LateTicket(fn(*args))
        self.waiting.append(ticket)
        return ticket


class _FakeHelpers:
    def __init__(self) -> None:
        self.worker = _FakeWorker()

    failed = False

    def get(self, count: int) -> list[_FakeWorker]:
        return [self.worker]

    def close(self) -> None:
        pass


def test_an_answer_arriving_while_the_queue_is_looked_at_is_given_once(monkeypatch):
    """Every item is yielded exactly once even when a helper's answer arrives between two looks at its ticket
    (a ticket read twice, pending on one read and done on the next, was once left out of both lists)."""
    monkeypatch.setattr(gw, "_HELPERS", _FakeHelpers())
    monkeypatch.setattr(gw, "helper_count", lambda: 1)
    items = [(i, torch.full((2,), float(i))) for i in range(7)]
    got = list(gw.map_with_helpers(iter(items), lambda x: {"x": x * 10}, lambda x: (lambda v: v + 0, (x,)), depth=2))
    assert sorted(i for i, _ in got) == list(range(7))
    # the fake helper never frees its queue: items 0 and 1 go to it (value i), the rest are computed here (10 i)
    assert {i: res["x"][0].item() for i, res in got} == {i: float(i if i < 2 else 10 * i) for i in range(7)}
