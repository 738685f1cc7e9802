"""ARPACK's symmetric Lanczos iteration (``eigsh(which="SM")``) on a CSR matrix, driven in a tight loop.

``laplacian.ipynb`` finds the three smallest Laplacian eigenvalues of graphs above 50 nodes with
``scipy.sparse.linalg.eigsh(L, k=3, which="SM")``. On the disconnected graphs where its answer differs
from the dense solver's, ARPACK takes hundreds of small steps, and most of the time of each step was
SciPy's Python around it: the reverse-communication call, the operator's dispatch and checks, a new
output array per product. :func:`eigsh_smallest` sets ARPACK up exactly as ``eigsh`` does (the same
parameter object, the same start vector) and runs the same loop with the product written straight
into ARPACK's work array by the kernel behind ``csr_matrix @ x``. ARPACK sees the same numbers, takes
the same steps and returns the same eigenvalues, bit for bit (tested against ``eigsh``). Where SciPy's
internals are not the ones this was written against, ``eigsh`` itself is called.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.linalg import ArpackError, LinearOperator, eigsh

try:  # the kernel behind ``csr_matrix @ vector``
    from scipy.sparse._sparsetools import csr_matvec as _csr_matvec
except ImportError:  # pragma: no cover - a SciPy that moved it
    _csr_matvec = None

try:  # the parameter object ``eigsh`` builds and iterates (SciPy >= 1.15: ARPACK in C, state in a dict)
    from scipy.sparse.linalg._eigen.arpack.arpack import _SymmetricArpackParams
except ImportError:  # pragma: no cover - a SciPy that moved it
    _SymmetricArpackParams = None


#: seed of the generator ARPACK draws a new start vector from when it asks for one (``ido == 4``, after
#: the given start led nowhere). ``eigsh`` seeds it from the operating system unless told otherwise,
#: which made the rare graphs that need it come out differently from one run to the next.
RESTART_SEED = 0


class CsrOperator(LinearOperator):
    """A CSR matrix as ARPACK's operator, with the product computed by the kernel ``csr_matrix @ x`` uses
    (so ARPACK sees the same numbers) but without the checks and dispatch of the public product."""

    def __init__(self, m: csr_matrix) -> None:
        super().__init__(dtype=np.float64, shape=m.shape)
        self.m = m

    def matvec(self, x: np.ndarray) -> np.ndarray:
        if _csr_matvec is None or x.ndim != 1:
            return np.asarray(self.m @ x)
        y = np.zeros(self.shape[0], dtype=np.float64)
        _csr_matvec(self.shape[0], self.shape[1], self.m.indptr, self.m.indices, self.m.data, x, y)
        return y

    def _matvec(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(self.m @ x)


def csr_parts(dense: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(indptr, indices, data)`` of ``csr_matrix(dense)`` for a square float64 ``dense``: the nonzero entries
    in row-major order, as that constructor stores them, without its conversions and checks."""
    rows, cols = np.nonzero(dense)
    indptr = np.zeros(dense.shape[0] + 1, dtype=np.int32)
    np.cumsum(np.bincount(rows, minlength=dense.shape[0]), out=indptr[1:])
    return indptr, cols.astype(np.int32), dense[rows, cols]


def _params(n: int, matvec: Any, k: int, v0: np.ndarray) -> Any:
    """The parameter object ``eigsh(op, k, which="SM", v0=v0, rng=np.random.default_rng(RESTART_SEED))``
    iterates (standard mode, no shift)."""
    return _SymmetricArpackParams(n, k, "d", matvec, 1, None, None, None, None, v0, None, "SM", 0,
                                  np.random.default_rng(RESTART_SEED))


def _fast_loop_available(params: Any) -> bool:
    """Whether ``params`` has the state the tight loop drives (else ``eigsh``'s own loop runs)."""
    names = ("_arpack_solver", "arpack_dict", "resid", "v", "ipntr", "workd", "workl", "extract", "rng")
    return _csr_matvec is not None and all(hasattr(params, name) for name in names)


def eigsh_smallest(m: csr_matrix, k: int, v0: np.ndarray) -> np.ndarray:
    """``eigsh(m, k, which="SM", v0=v0, return_eigenvectors=False, rng=np.random.default_rng(RESTART_SEED))``,
    the same values bit for bit.

    Raises what ``eigsh`` raises (``ArpackNoConvergence``, ``ArpackError``)."""
    return _lanczos(m.shape[0], m.indptr, m.indices, m.data, k, v0, lambda: m)


def eigsh_smallest_dense(dense: np.ndarray, k: int, v0: np.ndarray) -> np.ndarray:
    """:func:`eigsh_smallest` of ``csr_matrix(dense)`` (``dense`` square float64), the same values bit for bit,
    with the sparse arrays taken straight from ``dense``."""
    indptr, indices, data = csr_parts(dense)
    return _lanczos(dense.shape[0], indptr, indices, data, k, v0, lambda: csr_matrix(dense))


def _eigsh_itself(m: csr_matrix, k: int, v0: np.ndarray) -> np.ndarray:
    """SciPy's own ``eigsh`` with the same settings as the tight loop, for a SciPy whose internals differ."""
    return eigsh(CsrOperator(m), k=k, which="SM", v0=v0, return_eigenvectors=False,
                 rng=np.random.default_rng(RESTART_SEED))


def _lanczos(
    n: int, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, k: int, v0: np.ndarray, matrix: Any
) -> np.ndarray:
    """ARPACK's loop on the ``n x n`` CSR arrays; ``matrix()`` builds the ``csr_matrix`` for ``eigsh`` itself,
    called only where SciPy's internals are not the ones the loop drives."""
    if _SymmetricArpackParams is None:  # pragma: no cover - a SciPy that moved it
        return _eigsh_itself(matrix(), k, v0)

    def product(x: np.ndarray) -> np.ndarray:  # the operator ARPACK's parameter object is given
        y = np.zeros(n, dtype=np.float64)
        _csr_matvec(n, n, indptr, indices, data, x, y)
        return y

    params = _params(n, product, k, v0)
    if not _fast_loop_available(params):  # pragma: no cover - a SciPy that changed it
        return _eigsh_itself(matrix(), k, v0)
    solver, state = params._arpack_solver, params.arpack_dict
    resid, v, ipntr, workd, workl = params.resid, params.v, params.ipntr, params.workd, params.workl
    while True:
        solver(state, resid, v, ipntr, workd, workl)
        ido = state["ido"]
        if ido == 1 or ido == 5:  # y = A x, into ARPACK's work array
            y = workd[ipntr[1] : ipntr[1] + n]
            y.fill(0.0)
            _csr_matvec(n, n, indptr, indices, data, workd[ipntr[0] : ipntr[0] + n], y)
        elif ido == 2:  # y = B x with B the identity
            workd[ipntr[1] : ipntr[1] + n] = workd[ipntr[0] : ipntr[0] + n]
        elif ido == 4:  # a new random start, as eigsh draws it
            resid[:] = params.rng.uniform(low=-1.0, high=1.0, size=[n]).astype(resid.dtype)
        elif ido == 3:  # pragma: no cover - ARPACK asks for shifts only when told to
            raise ValueError("ARPACK requested user shifts")
        else:
            break
    info = state["info"]
    if info == 1:
        params._raise_no_convergence()
    elif info != 0:
        raise ArpackError(info, infodict=params.iterate_infodict)
    return params.extract(False)
