"""Lexical query-document features (thesis §4.4.4), vectorised over sparse term counts.

Notation: c(t, d) and c(t, q) are the counts of term t in document d and query q (after the
:class:`~models.features.tokenize.Analyzer`), |d| the document length in terms, N the number of
documents in the collection, df(t) the number of documents holding t, cf(t) its collection
frequency, |C| = Σ_d |d| and p(t|C) = cf(t) / |C|. Statistics come from *all* documents given to
:meth:`CollectionIndex.build`, not only the judged ones. Sums over query terms run over query term
*occurrences* (each distinct term weighted by c(t, q)), as Lucene/Anserini do for a repeated term.

- ``lex:tf``     = Σ_{t∈q∩d} c(t,q) · c(t,d)
- ``lex:idf``    = Σ_{t∈q∩d} c(t,q) · idf(t), with idf(t) = ln(N / df(t))
- ``lex:tfidf``  = Σ_{t∈q∩d} c(t,q) · c(t,d) · idf(t)
- ``lex:cosine`` = cosine of the TF-IDF vectors w_q(t) = c(t,q)·idf(t) and w_d(t) = c(t,d)·idf(t)
  (0 when either vector is zero)
- ``lex:bm25``   = Σ_{t∈q∩d} c(t,q) · idf_bm25(t) · c(t,d)(k1+1) / (c(t,d) + k1(1−b+b|d|/avgdl)),
  with Lucene's idf_bm25(t) = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5)), never negative
- ``lex:ql``     = log P(q|d) with Dirichlet smoothing (Zhai & Lafferty 2001; thesis ref. [178]):
  Σ_{t∈q} c(t,q) · ln((c(t,d) + μ p(t|C)) / (|d| + μ))

Defaults k1 = 0.9, b = 0.4 (Anserini's), μ = 1000. Lucene ≥ 8 drops the constant factor (k1+1)
from BM25 and stores document lengths lossily; we keep the classic Robertson form with exact
lengths (a constant factor is irrelevant after z-scoring).

Query terms that never occur in the collection (df = 0) are dropped from the query before every
feature: they match no document, idf(t) is undefined for them, and in the query likelihood
p(t|C) = 0 would make log P(q|d) = −∞ for every document. Dropping them is what Lucene/Anserini do
(a term without postings scores nothing); it shifts all of one query's QL scores by the same amount,
so rankings within a topic do not change. A query with no term left gets 0 for every feature
(log P(q|d) of the empty query is 0).

Cost: one pass over the document-term matrix for the per-document norms, then O(Σ_tasks |q|) gathers
with a binary search each (``np.searchsorted`` on the row-major keys of the sparse matrix); no
tasks × vocabulary matrix is ever built.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat

import numpy as np
import scipy.sparse as sp

from models.features.tokenize import Analyzer

LEXICAL_FEATURES = ("lex:tf", "lex:idf", "lex:tfidf", "lex:cosine", "lex:bm25", "lex:ql")


@dataclass(frozen=True)
class CollectionIndex:
    """Document-term counts and collection statistics.

    ``tf`` is a CSR matrix (n_docs, n_terms) of int32 counts with sorted column indices.
    """

    doc_ids: list[str]
    doc_row: dict[str, int]
    vocab: dict[str, int]
    tf: sp.csr_matrix
    df: np.ndarray  # (n_terms,) documents holding the term
    cf: np.ndarray  # (n_terms,) collection frequency
    doc_len: np.ndarray  # (n_docs,) terms per document
    analyzer: Analyzer

    @property
    def n_docs(self) -> int:
        return len(self.doc_ids)

    @property
    def n_terms(self) -> int:
        return len(self.vocab)

    @property
    def total_len(self) -> int:
        return int(self.doc_len.sum())

    @property
    def avgdl(self) -> float:
        return float(self.doc_len.mean()) if self.n_docs else 0.0

    @classmethod
    def build(
        cls, doc_texts: Mapping[str, str], analyzer: Analyzer | None = None
    ) -> CollectionIndex:
        """Index every document of the collection (ids in the mapping's order)."""
        analyzer = analyzer or Analyzer()
        vocab: dict[str, int] = {}
        # Surface word -> term id (-1: stop word), so each distinct word is analysed once.
        word_id: dict[str, int] = {}

        def lookup(word: str) -> int:
            term = analyzer.term(word)
            out = -1 if term is None else vocab.setdefault(term, len(vocab))
            word_id[word] = out
            return out

        doc_ids = list(doc_texts)
        indptr = np.zeros(len(doc_ids) + 1, dtype=np.int64)
        cols: list[np.ndarray] = []
        vals: list[np.ndarray] = []
        get = word_id.get
        for row, doc_id in enumerate(doc_ids):
            words = Counter(analyzer.words(doc_texts[doc_id]))
            ids = np.fromiter(map(get, words, repeat(-2)), dtype=np.int64, count=len(words))
            n = np.fromiter(words.values(), dtype=np.int64, count=len(words))
            unseen = np.flatnonzero(ids == -2)
            if unseen.size:
                surface = list(words)
                ids[unseen] = [lookup(surface[i]) for i in unseen]
            keep = ids >= 0
            ids, n = ids[keep], n[keep]
            # Several surface words may share a term ("cat", "cats"): sum them.
            order = np.argsort(ids, kind="stable")
            ids, n = ids[order], n[order]
            terms, first = np.unique(ids, return_index=True)
            cols.append(terms)
            vals.append(np.add.reduceat(n, first).astype(np.int32) if n.size else
                        n.astype(np.int32))
            indptr[row + 1] = indptr[row] + terms.size
        indices = np.concatenate(cols) if cols else np.zeros(0, dtype=np.int64)
        data = np.concatenate(vals) if vals else np.zeros(0, dtype=np.int32)
        tf = sp.csr_matrix((data, indices, indptr), shape=(len(doc_ids), len(vocab)))
        tf.has_sorted_indices = True
        df = np.bincount(indices, minlength=len(vocab)).astype(np.int64)
        cf = np.bincount(indices, weights=data, minlength=len(vocab))
        doc_len = np.diff(np.concatenate([[0], np.cumsum(data, dtype=np.int64)])[indptr])
        return cls(
            doc_ids=doc_ids,
            doc_row={d: i for i, d in enumerate(doc_ids)},
            vocab=vocab,
            tf=tf,
            df=df,
            cf=cf.astype(np.int64),
            doc_len=doc_len.astype(np.int64),
            analyzer=analyzer,
        )

    def query_matrix(self, texts: Sequence[str]) -> sp.csr_matrix:
        """Query-term counts (n_queries, n_terms), in-collection terms only (see module doc)."""
        rows, cols, vals = [], [], []
        for row, text in enumerate(texts):
            for term, n in self.analyzer.counts(text).items():
                col = self.vocab.get(term)
                if col is not None:
                    rows.append(row)
                    cols.append(col)
                    vals.append(n)
        out = sp.csr_matrix(
            (np.asarray(vals, dtype=np.float64), (np.asarray(rows, dtype=np.int64),
                                                  np.asarray(cols, dtype=np.int64))),
            shape=(len(texts), self.n_terms),
        )
        out.sum_duplicates()
        out.sort_indices()
        return out


def _row_norms(matrix: sp.csr_matrix, idf: np.ndarray) -> np.ndarray:
    """The TF-IDF norm of each row (a document of ``index.tf``, a query)."""
    rows = np.repeat(np.arange(matrix.shape[0]), np.diff(matrix.indptr))
    return np.sqrt(np.bincount(rows, weights=(matrix.data * idf[matrix.indices]) ** 2,
                               minlength=matrix.shape[0]))


def _query_lengths(queries: sp.csr_matrix, p_c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per query: its length |q| and Σ_t c(t,q) ln p(t|C)."""
    rows = np.repeat(np.arange(queries.shape[0]), np.diff(queries.indptr))
    return (np.bincount(rows, weights=queries.data, minlength=queries.shape[0]),
            np.bincount(rows, weights=queries.data * np.log(p_c[queries.indices]),
                        minlength=queries.shape[0]))


def _task_terms(queries: sp.csr_matrix,
                query_of_task: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One entry per (task, query term), each task's query row expanded: (task, term, c(t, q))."""
    starts = queries.indptr[query_of_task]
    lengths = queries.indptr[query_of_task + 1] - starts
    task = np.repeat(np.arange(query_of_task.shape[0]), lengths)
    pos = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(lengths.sum())
    return task, queries.indices[pos].astype(np.int64), queries.data[pos]


def _term_counts(tf: sp.csr_matrix, doc: np.ndarray, term: np.ndarray, *,
                 n_terms: int) -> np.ndarray:
    """c(t, d) per (doc, term) entry, by binary search on the row-major keys doc * n_terms +
    term of the CSR matrix ``tf``."""
    keys = np.repeat(np.arange(tf.shape[0], dtype=np.int64), np.diff(tf.indptr)) * n_terms \
        + tf.indices
    wanted = doc * n_terms + term
    if not keys.shape[0]:
        return np.zeros(term.shape[0])
    at = np.minimum(np.searchsorted(keys, wanted), keys.shape[0] - 1)
    return np.where(keys[at] == wanted, tf.data[at], 0).astype(np.float64)


def lexical_features(
    index: CollectionIndex,
    queries: sp.csr_matrix,
    query_of_task: np.ndarray,
    doc_of_task: np.ndarray,
    *,
    k1: float = 0.9,
    b: float = 0.4,
    mu: float = 1000.0,
) -> np.ndarray:
    """The (n_tasks, 6) matrix of :data:`LEXICAL_FEATURES` for tasks (query row, document row).

    ``queries`` comes from :meth:`CollectionIndex.query_matrix`; ``query_of_task`` and
    ``doc_of_task`` are int arrays of rows into it and into ``index.tf``.
    """
    query_of_task = np.asarray(query_of_task, dtype=np.int64)
    doc_of_task = np.asarray(doc_of_task, dtype=np.int64)
    if query_of_task.shape != doc_of_task.shape or query_of_task.ndim != 1:
        raise ValueError("query_of_task and doc_of_task must be 1-D arrays of equal length")
    n_tasks = query_of_task.shape[0]
    out = np.zeros((n_tasks, len(LEXICAL_FEATURES)))
    if n_tasks == 0:
        return out
    n_docs, n_terms = index.n_docs, max(index.n_terms, 1)
    df = index.df.astype(np.float64)
    with np.errstate(divide="ignore"):
        idf = np.where(df > 0, np.log(n_docs / np.maximum(df, 1.0)), 0.0)
    idf_bm25 = np.log1p((n_docs - df + 0.5) / (df + 0.5))
    p_c = index.cf / max(index.total_len, 1)

    # Per document: TF-IDF norm. Per query: TF-IDF norm, length, Σ c(t,q) ln p(t|C).
    tf = index.tf
    doc_norm = _row_norms(tf, idf)
    q_norm = _row_norms(queries, idf)
    q_len, q_background = _query_lengths(queries, p_c)
    task, term, c_q = _task_terms(queries, query_of_task)
    c_d = _term_counts(tf, doc_of_task[task], term, n_terms=n_terms)
    hit = c_d > 0

    dl = index.doc_len[doc_of_task].astype(np.float64)
    avgdl = index.avgdl or 1.0

    def per_task(weights: np.ndarray) -> np.ndarray:
        return np.bincount(task, weights=weights, minlength=n_tasks)

    out[:, 0] = per_task(c_q * c_d)
    out[:, 1] = per_task(np.where(hit, c_q * idf[term], 0.0))
    tfidf = c_q * c_d * idf[term]
    out[:, 2] = per_task(tfidf)
    dot = per_task(tfidf * idf[term])  # Σ (c_q idf)(c_d idf)
    denom = q_norm[query_of_task] * doc_norm[doc_of_task]
    out[:, 3] = np.divide(dot, denom, out=np.zeros(n_tasks), where=denom > 0)
    norm_len = k1 * (1.0 - b + b * dl[task] / avgdl)
    out[:, 4] = per_task(c_q * idf_bm25[term] * c_d * (k1 + 1.0) / (c_d + norm_len))
    # log P(q|d) = Σ_t c(t,q) ln(μ p(t|C)/(|d|+μ)) + Σ_{t∈q∩d} c(t,q) ln(1 + c(t,d)/(μ p(t|C)))
    #            = Σ_t c(t,q) ln p(t|C) + |q| ln(μ/(|d|+μ)) + (the matching-term part).
    match = per_task(c_q * np.log1p(c_d / (mu * p_c[term])))
    out[:, 5] = q_background[query_of_task] + q_len[query_of_task] * np.log(mu / (dl + mu)) + match
    return out
