"""One feature vector per (topic, doc) task from topic texts, document texts and runs.

Groups (thesis §4.4.4–4.4.5): ``lexical`` (:mod:`models.features.lexical`), ``ranking``
(:mod:`models.features.ranking`) and ``semantic`` (:mod:`models.features.embeddings`, optional).
``TaskFeatures.groups`` maps each group to its column indices, so a GP can put an RBF kernel on
the lexical and ranking columns and a linear kernel on the semantic ones (thesis §4.4.5).

Missing text. A task whose topic text or document text is missing has NaN lexical (and semantic)
values in ``raw``. In ``matrix`` they are imputed with the column mean over the tasks that have the
value, i.e. 0 after z-scoring, and flagged in ``imputed`` (a boolean (n_tasks, d) mask) and
``missing_text`` (one flag per task). A column with no observed value at all is 0.

Standardisation. ``matrix`` is ``raw`` z-scored per column over the tasks given (mean 0, standard
deviation 1, population std). Constant columns (std < 1e-12, e.g. a run that retrieved nothing of
the judged pool) are kept, set to 0, and named in ``constant``, so the columns and their names
do not change between collections. ``mean`` and ``scale`` are kept to standardise new tasks in the
same way (:meth:`TaskFeatures.standardise`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from models.features.lexical import LEXICAL_FEATURES, CollectionIndex, lexical_features
from models.features.ranking import RankTransform, Run, ranking_features
from models.features.tokenize import Analyzer

GROUPS = ("lexical", "ranking", "semantic")


@dataclass(frozen=True)
class TaskFeatures:
    tasks: list[tuple[str, str]]
    names: list[str]
    raw: np.ndarray  # (n_tasks, d), NaN where a value could not be computed
    matrix: np.ndarray  # (n_tasks, d), imputed and z-scored
    groups: dict[str, list[int]]
    mean: np.ndarray  # (d,) column means of raw over observed values
    scale: np.ndarray  # (d,) column std; 1 for constant columns
    constant: list[str]
    imputed: np.ndarray  # (n_tasks, d) bool
    missing_text: np.ndarray  # (n_tasks,) bool: topic or doc text missing
    notes: list[str] = field(default_factory=list)

    @property
    def dim(self) -> int:
        return len(self.names)

    def standardise(self, raw: np.ndarray) -> np.ndarray:
        """New raw rows in the columns' scale: impute NaN with the mean, z-score, constants 0."""
        raw = np.asarray(raw, dtype=np.float64)
        filled = np.where(np.isnan(raw), self.mean, raw)
        out = (filled - self.mean) / self.scale
        out[..., [self.names.index(name) for name in self.constant]] = 0.0
        return out

    def as_dict(self) -> dict[tuple[str, str], list[float]]:
        """{(topic, doc): standardised vector}, the form ``AnnotationData.with_features`` takes."""
        return {task: row.tolist() for task, row in zip(self.tasks, self.matrix, strict=True)}

    def gp_params(self) -> dict[str, str]:
        """``kernel`` and ``feature_groups`` params for MAGP/GPMV: see :func:`kernel_params`."""
        return kernel_params(self.groups)

    def to_tsv(self, *, standardised: bool = True) -> str:
        """The features file format (``app.formats.features_file``): header topic, doc, names."""
        values = self.matrix if standardised else self.raw
        lines = ["\t".join(["topic", "doc", *self.names])]
        for (topic, doc), row in zip(self.tasks, values, strict=True):
            lines.append("\t".join([topic, doc, *(repr(float(v)) for v in row)]))
        return "\n".join(lines) + "\n"


def kernel_params(groups: Mapping[str, Sequence[int]]) -> dict[str, str]:
    """``kernel`` and ``feature_groups`` params for MAGP/GPMV (``models.gp.model``): one RBF
    kernel over the lexical, ranking and other columns and a linear kernel over the semantic ones
    (thesis §4.4.5), e.g. ``{"kernel": "rbf+linear", "feature_groups": "0:8;8:392"}``.

    Without semantic columns (or when a group is not one contiguous range of columns, which the
    GP's column slices cannot express) it returns {}: the GP's default RBF over every column.
    """
    semantic = sorted(groups.get("semantic", []))
    smooth = sorted(i for name, cols in groups.items() if name != "semantic" for i in cols)
    if not semantic or not smooth:
        return {}
    ranges = []
    for cols in (smooth, semantic):
        if cols != list(range(cols[0], cols[-1] + 1)):
            return {}
        ranges.append(f"{cols[0]}:{cols[-1] + 1}")
    return {"kernel": "rbf+linear", "feature_groups": ";".join(ranges)}


def with_kernel_params(method: str, params: Mapping[str, object],
                       groups: Mapping[str, Sequence[int]] | None) -> dict[str, object]:
    """The GP methods' params with kernels per feature group, unless the caller chose them."""
    out = dict(params)
    if method in ("magp", "gpmv") and groups and not {"kernel", "feature_groups"} & set(out):
        out.update(kernel_params(groups))
    return out


def build_features(
    tasks: Sequence[tuple[str, str]],
    *,
    topic_texts: Mapping[str, str] | None = None,
    doc_texts: Mapping[str, str] | None = None,
    runs: Mapping[str, Run] | None = None,
    embeddings: bool = False,
    analyzer: Analyzer | None = None,
    k1: float = 0.9,
    b: float = 0.4,
    mu: float = 1000.0,
    default_depth: int | None = None,
    rank_transform: RankTransform = "normal",
    embedder: Callable[[list[str]], np.ndarray] | None = None,
    n_product_dims: int = 0,
    timings: dict[str, float] | None = None,
) -> TaskFeatures:
    """Feature vectors for ``tasks`` (list of (topic id, doc id)).

    - lexical features when both ``topic_texts`` and ``doc_texts`` are given; the collection
      statistics come from every document in ``doc_texts``;
    - ranking features when ``runs`` ({run name: {topic: [doc, ...] best first}}) is given,
      ``rank_transform`` choosing their form (:func:`models.features.ranking.ranking_features`:
      ``"normal"``, the runs' Blom normal scores within each topic's tasks, by default);
    - semantic features when ``embeddings`` is true (needs both texts and the optional
      ``crowdqrels[embeddings]`` dependencies, or an ``embedder`` callable texts -> vectors).
    ``timings`` (optional) receives seconds per stage.
    """
    tasks = [(str(t), str(d)) for t, d in tasks]
    if len(set(tasks)) != len(tasks):
        raise ValueError("tasks must be distinct (topic, doc) pairs")
    blocks: list[tuple[str, list[str], np.ndarray]] = []
    notes: list[str] = []
    missing = _missing_text(tasks, topic_texts, doc_texts, notes)
    watch = _Stopwatch(timings)
    if topic_texts is not None and doc_texts is not None:
        lex = _lexical_block(tasks, topic_texts, doc_texts, missing, analyzer=analyzer,
                             k1=k1, b=b, mu=mu, watch=watch)
        blocks.append(("lexical", list(LEXICAL_FEATURES), lex))
        watch.lap("lexical")
    elif topic_texts is not None or doc_texts is not None:
        notes.append("lexical features need both topic and document texts: skipped")
    if runs:
        names, values = ranking_features(tasks, runs, default_depth=default_depth,
                                         transform=rank_transform)
        blocks.append(("ranking", names, values))
        watch.lap("ranking")
    if embeddings:
        if topic_texts is None or doc_texts is None:
            raise ValueError("semantic features need both topic_texts and doc_texts")
        from models.features.embeddings import semantic_features

        names, values = semantic_features(tasks, topic_texts, doc_texts, embedder=embedder,
                                          n_product_dims=n_product_dims)
        blocks.append(("semantic", names, values))
        watch.lap("semantic")
    names, groups, raw = _columns(blocks, len(tasks))
    matrix, mean, scale, constant, imputed = _standardise(raw)
    watch.lap("standardise")
    return TaskFeatures(
        tasks=tasks, names=names, raw=raw, matrix=matrix, groups=groups, mean=mean,
        scale=scale, constant=[names[j] for j in constant], imputed=imputed,
        missing_text=missing, notes=notes,
    )


def _missing_text(tasks: list[tuple[str, str]], topic_texts: Mapping[str, str] | None,
                  doc_texts: Mapping[str, str] | None, notes: list[str]) -> np.ndarray:
    """Per task: its topic or document text is missing (none without both texts)."""
    if topic_texts is None or doc_texts is None:
        return np.zeros(len(tasks), dtype=bool)
    missing = np.array([t not in topic_texts or d not in doc_texts for t, d in tasks],
                       dtype=bool)
    if missing.any():
        notes.append(f"{int(missing.sum())} tasks lack topic or document text: "
                     "their lexical/semantic values are imputed with column means")
    return missing


class _Stopwatch:
    """Seconds per stage into ``timings`` (when given), each from the end of the one before."""

    def __init__(self, timings: dict[str, float] | None) -> None:
        self.timings = timings
        self.clock = time.perf_counter()

    def lap(self, stage: str) -> None:
        if self.timings is not None:
            self.timings[stage] = time.perf_counter() - self.clock
            self.clock = time.perf_counter()


def _lexical_block(tasks: list[tuple[str, str]], topic_texts: Mapping[str, str],
                   doc_texts: Mapping[str, str], missing: np.ndarray, *,
                   analyzer: Analyzer | None, k1: float, b: float, mu: float,
                   watch: _Stopwatch) -> np.ndarray:
    """The lexical columns, NaN for the tasks ``missing`` a text; the collection statistics
    come from every document in ``doc_texts``."""
    index = CollectionIndex.build(doc_texts, analyzer)
    watch.lap("index")
    topic_ids = list(topic_texts)
    topic_row = {t: i for i, t in enumerate(topic_ids)}
    queries = index.query_matrix([topic_texts[t] for t in topic_ids])
    ok = ~missing
    q_of = np.array([topic_row.get(t, 0) for t, _ in tasks], dtype=np.int64)
    d_of = np.array([index.doc_row.get(d, 0) for _, d in tasks], dtype=np.int64)
    lex = np.full((len(tasks), len(LEXICAL_FEATURES)), np.nan)
    lex[ok] = lexical_features(index, queries, q_of[ok], d_of[ok], k1=k1, b=b, mu=mu)
    return lex


def _columns(blocks: list[tuple[str, list[str], np.ndarray]],
             n: int) -> tuple[list[str], dict[str, list[int]], np.ndarray]:
    """The blocks side by side: column names, each group's column indices, the raw matrix."""
    names: list[str] = []
    groups: dict[str, list[int]] = {}
    for group, block_names, _ in blocks:
        groups[group] = list(range(len(names), len(names) + len(block_names)))
        names += block_names
    raw = np.concatenate([v for _, _, v in blocks], axis=1) if blocks else np.zeros((n, 0))
    return names, groups, raw


def _standardise(raw: np.ndarray):
    imputed = np.isnan(raw)
    observed = (~imputed).sum(axis=0)
    total = np.where(imputed, 0.0, raw).sum(axis=0)
    mean = np.divide(total, observed, out=np.zeros(raw.shape[1]), where=observed > 0)
    filled = np.where(imputed, mean, raw)
    std = filled.std(axis=0) if raw.shape[0] else np.zeros(raw.shape[1])
    constant = np.flatnonzero(std < 1e-12)
    scale = np.where(std < 1e-12, 1.0, std)
    matrix = (filled - mean) / scale
    matrix[:, constant] = 0.0
    return matrix, mean, scale, constant.tolist(), imputed
