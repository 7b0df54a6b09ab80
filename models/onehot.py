"""The judgments as one-hot rows grouped by task, and the two sums every confusion-matrix EM pass
is made of (Dawid–Skene's ``Judgments``, IBCC's design).

Row i holds task i's judgments as columns (a model's code of "annotator j said l": l·J + j for
Dawid–Skene, j·K + l for IBCC), each distinct column once with the number of judgments it holds.
``row_sums`` is the E step's gather, Σ_{a ∈ i} table[column(a), c] per task; ``column_sums`` the
M step's scatter, Σ_{a in column} weights[task(a), c] per column. A CSR matrix built by counting,
with compiled passes (``models.onehot_kernels``) that read it once for all the classes, where
scipy's products read it once per class and needed its transpose too: at 10,000,000 judgments
the two scipy matrices took 0.9 s of CPU and 0.24 GiB to build per fit, this 0.2 s and 0.06 GiB
(docs/benchmarks.md, "branch ds10m"). The sums are scipy's, in scipy's order: the same bits.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse


@dataclass(frozen=True)
class OneHot:
    """Rows by task: ``ptr`` (n_tasks + 1), ``col`` (entries: the distinct columns of each row,
    ascending), ``count`` (entries: judgments per entry; empty when every entry holds one)."""

    ptr: np.ndarray
    col: np.ndarray
    count: np.ndarray
    n_columns: int

    @classmethod
    def build(cls, task: np.ndarray, column: np.ndarray, n_tasks: int, n_columns: int
              ) -> OneHot:
        """From one (task, column) pair per judgment."""
        # numba is imported when fitting, not with the module (the API imports models without
        # a compiler)
        from models import onehot_kernels

        n = task.shape[0]
        ptr = np.empty(n_tasks + 1, dtype=np.int64)
        col = np.empty(n, dtype=np.int32 if n_columns < 2**31 else np.int64)
        count = np.empty(n)
        nnz = onehot_kernels.group_by_task(np.ascontiguousarray(task, dtype=np.int64),
                                           np.ascontiguousarray(column, dtype=np.int64),
                                           n_tasks, ptr, col, count)
        if nnz == n:  # no repeated (task, column): every entry one judgment
            count = np.empty(0)
        else:
            col, count = col[:nnz].copy(), count[:nnz].copy()
        return cls(ptr, col, count, n_columns)

    @property
    def n_tasks(self) -> int:
        return int(self.ptr.shape[0] - 1)

    def judgments_per_column(self) -> np.ndarray:
        """(n_columns,) the judgments in each column."""
        return np.bincount(self.col, weights=self.count if self.count.size else None,
                           minlength=self.n_columns).astype(np.float64)

    def row_sums(self, table: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """(n_tasks, C): Σ_{a ∈ i} table[column(a), c] for ``table`` (n_columns, C), into
        ``out`` (any layout, e.g. the transpose of a class-major (C, n_tasks) array)."""
        from models import onehot_kernels

        table = np.ascontiguousarray(table, dtype=np.float64)
        if out is None:
            out = np.empty((self.n_tasks, table.shape[1]))
        onehot_kernels.row_sums(self.ptr, self.col, self.count, table, out)
        return out

    def column_sums(self, weights: np.ndarray) -> np.ndarray:
        """(n_columns, C): Σ_{a in column} weights[task(a), c] for ``weights`` (n_tasks, C),
        any layout (e.g. the transpose of a class-major posterior)."""
        from models import onehot_kernels

        out = np.empty((self.n_columns, weights.shape[1]))
        onehot_kernels.column_sums(self.ptr, self.col, self.count, weights, out)
        return out

    @cached_property
    def csr(self) -> scipy.sparse.csr_matrix:
        """The same rows as a scipy matrix (n_tasks × n_columns), for callers that multiply by
        it (ordinal-ds)."""
        data = self.count if self.count.size else np.ones(self.col.shape[0])
        return scipy.sparse.csr_matrix((data, self.col, self.ptr),
                                       shape=(self.n_tasks, self.n_columns))
