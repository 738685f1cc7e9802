"""ARPACK's symmetric Lanczos iteration as ``laplacian.ipynb`` calls it (``eigsh(which="SM")``), made repeatable.

``laplacian.ipynb`` finds the three smallest Laplacian eigenvalues of graphs above 50 nodes with
``scipy.sparse.linalg.eigsh(L, k=3, which="SM")``. This module calls the same public function on the same
sparse matrix, with two differences that make its answers repeat: the start vector is given (``v0``, drawn
by the caller from a fixed seed, where the notebook lets ARPACK draw one), and where ARPACK asks for a new
random start vector (its Krylov space ran out) it is drawn from a generator seeded with :data:`RESTART_SEED`
(``eigsh``'s ``rng``, SciPy >= 1.17). SciPy 1.15 and 1.16 take no ``rng``: their ARPACK draws restart vectors
from a generator of its own, so the rare graphs that need a restart can give other answers from one run to the
next there; every other graph gives the same eigenvalues up to round-off.

SciPy 1.15 replaced the Fortran ARPACK with a translation to C, and the two do not stop at the same place on
a disconnected graph: from the same start, SciPy 1.14 and older find the repeated eigenvalue 0 several times
(as the dense solver does), 1.15 and later find it once and then the smallest nonzero eigenvalues. That is a
different Fiedler value, not round-off, so ``pyproject.toml`` asks for SciPy >= 1.15.
"""

from __future__ import annotations

import functools
import inspect

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.linalg import eigsh

#: seed of the generator ARPACK draws a new start vector from when it asks for one (after the given start
#: led nowhere). ``eigsh`` seeds it from the operating system unless told otherwise, which made the rare
#: graphs that need it come out differently from one run to the next.
RESTART_SEED = 0


@functools.cache
def _eigsh_takes_rng() -> bool:
    """Whether this SciPy's ``eigsh`` takes the generator of ARPACK's restarts (``rng``, SciPy >= 1.17)."""
    return "rng" in inspect.signature(eigsh).parameters


def csr_parts(dense: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(indptr, indices, data)`` of ``csr_matrix(dense)`` for a square float64 ``dense``: the nonzero entries
    in row-major order, as that constructor stores them, without its conversions and checks."""
    rows, cols = np.nonzero(dense)
    indptr = np.zeros(dense.shape[0] + 1, dtype=np.int32)
    np.cumsum(np.bincount(rows, minlength=dense.shape[0]), out=indptr[1:])
    return indptr, cols.astype(np.int32), dense[rows, cols]


def eigsh_smallest(m: csr_matrix, k: int, v0: np.ndarray) -> np.ndarray:
    """``eigsh(m, k, which="SM", v0=v0, return_eigenvectors=False)``, with ARPACK's restarts drawn from
    ``np.random.default_rng(RESTART_SEED)`` where this SciPy takes that generator.

    Raises what ``eigsh`` raises (``ArpackNoConvergence``, ``ArpackError``)."""
    restarts = {"rng": np.random.default_rng(RESTART_SEED)} if _eigsh_takes_rng() else {}
    return np.asarray(eigsh(m, k=k, which="SM", v0=v0, return_eigenvectors=False, **restarts))


def eigsh_smallest_dense(dense: np.ndarray, k: int, v0: np.ndarray) -> np.ndarray:
    """:func:`eigsh_smallest` of ``csr_matrix(dense)`` (``dense`` square float64), with the sparse arrays taken
    straight from ``dense`` (:func:`csr_parts`)."""
    indptr, indices, data = csr_parts(dense)
    return eigsh_smallest(csr_matrix((data, indices, indptr), shape=dense.shape), k, v0)
