"""Judgments in long format: one row per judgment, integer-coded.

Models never see a tasks x annotators matrix: every statistic is a gather or a segment sum over
these arrays (``np.bincount``, ``np.add.at``), so memory grows with the number of judgments only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

UNKNOWN = -1  # class index of a task without a gold label


@dataclass(frozen=True)
class AnnotationData:
    """Integer-coded judgments plus the external ids needed to write results back.

    ``label`` holds class indices into ``classes`` (the label values, sorted), so a binary model
    sees 0/1 and a graded one 0..K-1 whatever the collection's scale is. ``gold`` (optional) holds a
    class index per task or ``UNKNOWN``; ``features`` (optional) one row per task.
    """

    task: np.ndarray  # (n_judgments,) int64, index into topic_ids / doc_ids
    annotator: np.ndarray  # (n_judgments,) int64, index into annotator_ids
    label: np.ndarray  # (n_judgments,) int64, index into classes
    topic_ids: np.ndarray  # (n_tasks,) str
    doc_ids: np.ndarray  # (n_tasks,) str
    annotator_ids: np.ndarray  # (n_annotators,) str
    classes: np.ndarray  # (n_classes,) int, the label values in ascending order
    gold: np.ndarray | None = None  # (n_tasks,) int64 class index or UNKNOWN
    features: np.ndarray | None = None  # (n_tasks, d) float64
    notes: tuple[str, ...] = field(default=())  # what the builder dropped or changed

    def __post_init__(self) -> None:
        n = self.task.shape[0]
        if self.annotator.shape != (n,) or self.label.shape != (n,):
            raise ValueError("task, annotator and label must be 1-D arrays of equal length")
        if self.topic_ids.shape != self.doc_ids.shape:
            raise ValueError("topic_ids and doc_ids must have one entry per task")
        if n and (self.task.min() < 0 or self.task.max() >= self.n_tasks):
            raise ValueError("task index out of range")
        if n and (self.annotator.min() < 0 or self.annotator.max() >= self.n_annotators):
            raise ValueError("annotator index out of range")
        if n and (self.label.min() < 0 or self.label.max() >= self.n_classes):
            raise ValueError("label index out of range")
        if self.gold is not None and self.gold.shape != (self.n_tasks,):
            raise ValueError("gold must have one entry per task")
        if self.features is not None and (
            self.features.ndim != 2 or self.features.shape[0] != self.n_tasks
        ):
            raise ValueError("features must be a (n_tasks, d) array")

    # -- sizes -------------------------------------------------------------------------------
    @property
    def n_judgments(self) -> int:
        return int(self.task.shape[0])

    @property
    def n_tasks(self) -> int:
        return int(self.topic_ids.shape[0])

    @property
    def n_annotators(self) -> int:
        return int(self.annotator_ids.shape[0])

    @property
    def n_classes(self) -> int:
        return int(self.classes.shape[0])

    @property
    def is_binary(self) -> bool:
        return self.n_classes == 2

    # -- derived views -----------------------------------------------------------------------
    def counts(self) -> np.ndarray:
        """Votes per task and class, (n_tasks, n_classes): small, since n_classes is tiny."""
        flat = self.task * self.n_classes + self.label
        return np.bincount(flat, minlength=self.n_tasks * self.n_classes).reshape(
            self.n_tasks, self.n_classes
        )

    def judgments_per_annotator(self) -> np.ndarray:
        return np.bincount(self.annotator, minlength=self.n_annotators)

    def judgments_per_task(self) -> np.ndarray:
        return np.bincount(self.task, minlength=self.n_tasks)

    def gold_agreement(self) -> tuple[np.ndarray, np.ndarray]:
        """Per annotator (judgments of gold tasks, how many of them equal the gold label)."""
        gold = self.gold[self.task] if self.gold is not None else np.full(self.n_judgments,
                                                                         UNKNOWN)
        on_gold = gold != UNKNOWN
        n = np.bincount(self.annotator[on_gold], minlength=self.n_annotators)
        agree = np.bincount(self.annotator[on_gold],
                            weights=(self.label[on_gold] == gold[on_gold]).astype(np.float64),
                            minlength=self.n_annotators)
        return n, agree

    def with_gold(self, gold: dict[tuple[str, str], int]) -> AnnotationData:
        """Attach gold labels given as raw label values keyed by (topic, doc).

        Values not in ``classes`` (e.g. -2, broken link) and unjudged pairs are left UNKNOWN.
        """
        index = {v: i for i, v in enumerate(self.classes.tolist())}
        out = np.full(self.n_tasks, UNKNOWN, dtype=np.int64)
        for i, key in enumerate(zip(self.topic_ids.tolist(), self.doc_ids.tolist(), strict=True)):
            value = gold.get(key)
            if value is not None and value in index:
                out[i] = index[value]
        return replace(self, gold=out)

    def judged_only(self) -> AnnotationData:
        """The same judgments with the tasks nobody judged left out (the others keep their
        order, renumbered 0..; annotators and classes unchanged). A model's per-task passes
        then cost the judged tasks only: the read-out's half fits (``models.tempering``) see
        about half the tasks."""
        judged = self.judgments_per_task() > 0
        if judged.all():
            return self
        position = np.cumsum(judged) - 1
        return replace(self, task=position[self.task], topic_ids=self.topic_ids[judged],
                       doc_ids=self.doc_ids[judged],
                       gold=None if self.gold is None else self.gold[judged],
                       features=None if self.features is None else self.features[judged])

    def with_features(
        self, features: dict[tuple[str, str], Sequence[float]], *, dim: int
    ) -> AnnotationData:
        """Attach feature vectors keyed by (topic, doc).

        Tasks without a vector get the column means of the others (and a note saying how many),
        so that the GP prior still covers them; with no vector at all this is an error.
        """
        out = np.full((self.n_tasks, dim), np.nan)
        for i, key in enumerate(zip(self.topic_ids.tolist(), self.doc_ids.tolist(), strict=True)):
            vector = features.get(key)
            if vector is not None:
                out[i] = vector
        missing = np.isnan(out).any(axis=1)
        notes = self.notes
        if missing.all():
            raise ValueError("no judged task has a feature vector")
        if missing.any():
            out[missing] = np.nanmean(out[~missing], axis=0)
            notes = (*notes, f"{int(missing.sum())} tasks had no features: imputed column means")
        return replace(self, features=out, notes=notes)

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def from_rows(
        cls,
        topics: Iterable[str],
        docs: Iterable[str],
        annotators: Iterable[str],
        labels: Iterable[int],
        *,
        ignore: Iterable[int] = (),
        relevant_from: int | None = None,
        scale: Iterable[int] | None = None,
        gold: Iterable[int | None] | None = None,
    ) -> AnnotationData:
        """Build from raw judgment rows in arrival order.

        - labels in ``ignore`` ("could not judge", e.g. -2) are dropped;
        - the latest judgment per (task, annotator) is kept, earlier ones dropped;
        - with ``relevant_from`` labels are binarised (label >= relevant_from -> 1, else 0);
          without it they stay graded: the classes are ``scale`` (the collection's label values
          less ``ignore``) or, without a scale, the distinct values seen.
        ``gold`` (optional, aligned with the rows) gives each row's task gold label as a raw value;
        the last non-None value seen for a task wins.
        """
        topic_arr = np.asarray(list(topics), dtype=object)
        doc_arr = np.asarray(list(docs), dtype=object)
        ann_arr = np.asarray(list(annotators), dtype=object)
        label_arr = np.asarray(list(labels), dtype=np.int64)
        n = label_arr.shape[0]
        if not (topic_arr.shape[0] == doc_arr.shape[0] == ann_arr.shape[0] == n):
            raise ValueError("topics, docs, annotators and labels must have equal length")
        gold_arr = None
        if gold is not None:
            gold_arr = np.asarray(
                [UNKNOWN if g is None else g for g in gold], dtype=np.int64
            )
            if gold_arr.shape[0] != n:
                raise ValueError("gold must be aligned with the judgment rows")
        ignored = set(ignore)
        scale_arr = None
        if scale is not None:
            scale_arr = np.array(sorted(set(scale) - ignored), dtype=np.int64)
        return cls._build(topic_arr, doc_arr, ann_arr, label_arr, gold_arr,
                          ignore=ignored, relevant_from=relevant_from, scale=scale_arr)

    @classmethod
    def from_codes(
        cls,
        task: np.ndarray,
        annotator: np.ndarray,
        labels: np.ndarray,
        *,
        task_topics: Sequence[str],
        task_docs: Sequence[str],
        annotator_names: Sequence[str],
        task_gold: np.ndarray | None = None,
        ignore: Iterable[int] = (),
        relevant_from: int | None = None,
        scale: Iterable[int] | None = None,
    ) -> AnnotationData:
        """``from_rows`` for judgments already integer-coded, e.g. read from a database: ``task``
        indexes ``task_topics`` / ``task_docs`` (and ``task_gold``, raw gold values or
        ``UNKNOWN``), ``annotator`` indexes ``annotator_names``; every (topic, doc) and every
        annotator name appears once. The result equals ``from_rows`` on the same judgments
        spelled out (same task and annotator order, notes, drops), while the names are sorted
        once per task and annotator instead of once per judgment."""
        task = np.asarray(task, dtype=np.int64)
        annotator = np.asarray(annotator, dtype=np.int64)
        label_arr = np.asarray(labels, dtype=np.int64)
        n = label_arr.shape[0]
        if task.shape != (n,) or annotator.shape != (n,):
            raise ValueError("task, annotator and labels must have equal length")
        # Only the tasks and annotators the judgments name, ordered by name as from_rows does
        # (numpy's string order: by code point, as Python's).
        present, task = _unique_codes(task, len(task_topics))
        topics = _str_subset(task_topics, present)
        docs = _str_subset(task_docs, present)
        by_name = np.lexsort((docs, topics))
        rank = np.empty_like(by_name)
        rank[by_name] = np.arange(by_name.shape[0])
        gold = None
        if task_gold is not None:
            gold = np.asarray(task_gold, dtype=np.int64)[present][by_name]
        used, annotator = _unique_codes(annotator, len(annotator_names))
        names = _str_subset(annotator_names, used)
        name_order = np.argsort(names, kind="stable")
        name_rank = np.empty_like(name_order)
        name_rank[name_order] = np.arange(name_order.shape[0])
        ignored = set(ignore)
        return cls._assemble(
            rank[task], topics[by_name], docs[by_name], name_rank[annotator], names[name_order],
            label_arr, gold, ignore=ignored, relevant_from=relevant_from,
            scale=None if scale is None else np.array(sorted(set(scale) - ignored),
                                                      dtype=np.int64))

    @classmethod
    def _build(
        cls,
        topic_arr: np.ndarray,
        doc_arr: np.ndarray,
        ann_arr: np.ndarray,
        label_arr: np.ndarray,
        gold_arr: np.ndarray | None,
        *,
        ignore: set[int],
        relevant_from: int | None,
        scale: np.ndarray | None,
    ) -> AnnotationData:
        # Tasks are (topic, doc) pairs; encode both and combine into one key.
        topic_codes, topic_uniq = _encode(topic_arr)
        doc_codes, doc_uniq = _encode(doc_arr)
        pair = topic_codes * np.int64(len(doc_uniq)) + doc_codes
        pair_uniq, task = np.unique(pair, return_inverse=True)
        task_topics = topic_uniq[pair_uniq // len(doc_uniq)]
        task_docs = doc_uniq[pair_uniq % len(doc_uniq)]
        annotator, ann_uniq = _encode(ann_arr)

        gold_task: np.ndarray | None = None
        if gold_arr is not None:
            # Gold comes per row; keep the last known value per task. Ignored values and other
            # negatives (RF10's -1) are unknown.
            known = _known_gold(gold_arr, ignore)
            gold_task = np.full(len(pair_uniq), UNKNOWN, dtype=np.int64)
            gold_task[task[known]] = gold_arr[known]
        return cls._assemble(task, task_topics, task_docs, annotator, ann_uniq, label_arr,
                             gold_task, ignore=ignore, relevant_from=relevant_from, scale=scale)

    @classmethod
    def _assemble(
        cls,
        task: np.ndarray,
        task_topics: np.ndarray,
        task_docs: np.ndarray,
        annotator: np.ndarray,
        ann_uniq: np.ndarray,
        label_arr: np.ndarray,
        gold_task: np.ndarray | None,
        *,
        ignore: set[int],
        relevant_from: int | None,
        scale: np.ndarray | None,
    ) -> AnnotationData:
        """The shared end of ``from_rows`` and ``from_codes``: ``task`` indexes the (topic, doc)
        pairs sorted by name, ``annotator`` the sorted names, ``gold_task`` the raw gold value
        of each pair (``UNKNOWN``: none)."""
        notes: list[str] = []
        pair_count = task_topics.shape[0]
        if gold_task is not None:
            gold_task = np.where(_known_gold(gold_task, ignore), gold_task, UNKNOWN)
        latest = _latest_usable(task, annotator, label_arr, n_annotators=len(ann_uniq),
                                ignore=ignore, notes=notes)
        if latest is not None:
            task, annotator, label_arr = task[latest], annotator[latest], label_arr[latest]

        # Tasks and annotators left without a usable judgment (e.g. only "broken link") are not
        # part of the data: no model can say anything about them.
        used_tasks, task_index = _unique_codes(task, pair_count)
        del task
        used_annotators, annotator_index = _unique_codes(annotator, len(ann_uniq))
        del annotator
        if used_tasks.shape[0] < pair_count:
            notes.append(
                f"dropped {pair_count - used_tasks.shape[0]} tasks without a usable judgment"
            )
        if used_annotators.shape[0] < ann_uniq.shape[0]:
            notes.append(
                f"dropped {ann_uniq.shape[0] - used_annotators.shape[0]} annotators without a "
                "usable judgment"
            )
        task_topics = task_topics[used_tasks]
        task_docs = task_docs[used_tasks]
        ann_uniq = ann_uniq[used_annotators]
        if gold_task is not None:
            gold_task = gold_task[used_tasks]
        values, label, gold_task = _label_codes(label_arr, gold_task,
                                                relevant_from=relevant_from, scale=scale)

        return cls(
            task=task_index.astype(np.int64, copy=False),
            annotator=annotator_index.astype(np.int64, copy=False),
            label=label,
            topic_ids=task_topics.astype(str),
            doc_ids=task_docs.astype(str),
            annotator_ids=ann_uniq.astype(str),
            classes=values,
            gold=gold_task,
            notes=tuple(notes),
        )


def _str_subset(values: Sequence[str], at: np.ndarray) -> np.ndarray:
    """``np.asarray(values, dtype=object)[at].astype(str)``: a str array of the items ``at``,
    as wide as the longest; a str array given is indexed directly (no Python string per
    item: 2,000,000 document ids)."""
    if isinstance(values, np.ndarray) and values.dtype.kind == "U" and values.ndim == 1:
        subset = np.ascontiguousarray(values[at])
        width = subset.dtype.itemsize // 4
        if width == 0 or subset.shape[0] == 0:
            return subset.astype("<U1")
        characters = subset.view(np.uint32).reshape(subset.shape[0], width)
        while width > 1 and not characters[:, width - 1].any():  # the longest id's length
            width -= 1
        return subset.astype(f"<U{width}")
    return np.asarray(values, dtype=object)[at].astype(str)


def _unique_codes(codes: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(codes, return_inverse=True)`` for codes in [0, size): the same arrays from a
    count per code instead of a sort (10 million judgments: one pass, not n log n)."""
    if codes.size and (int(codes.min()) < 0 or int(codes.max()) >= size):
        return np.unique(codes, return_inverse=True)
    present = np.flatnonzero(np.bincount(codes, minlength=size))
    if present.shape[0] == size:  # every code used (a scan's codes): the inverse is the codes
        return present, codes.astype(np.intp, copy=False)
    position = np.zeros(size, dtype=np.intp)
    position[present] = np.arange(present.shape[0])
    return present, position[codes]


def _known_gold(gold: np.ndarray, ignore: set[int]) -> np.ndarray:
    """Where ``gold`` is a gold label: ignored values and other negatives (RF10's -1) are none."""
    known = gold >= 0
    if ignore:
        known &= ~np.isin(gold, list(ignore))
    return known


def _latest_usable(task: np.ndarray, annotator: np.ndarray, label: np.ndarray, *,
                   n_annotators: int, ignore: set[int], notes: list[str]) -> np.ndarray | None:
    """The rows kept (sorted): no ignored label, and the latest judgment per (task,
    annotator); None when that is every row. What was dropped is said in ``notes``. Two
    compiled passes (``models.data_kernels``), no sort."""
    idx = None
    if ignore:
        dropped = np.isin(label, list(ignore))
        if dropped.any():
            notes.append(f"dropped {int(dropped.sum())} 'could not judge' judgments")
            idx = np.flatnonzero(~dropped)
        del dropped
    from models.data_kernels import latest_per_pair

    task = task if idx is None else task[idx]
    annotator = annotator if idx is None else annotator[idx]
    n_tasks = int(task.max()) + 1 if task.shape[0] else 0
    # Latest judgment per (task, annotator): the last row of each pair, in arrival order (a
    # stable sort's last of each run of equal keys, found without the sort)
    last = latest_per_pair(np.asarray(task, dtype=np.int64),
                           np.asarray(annotator, dtype=np.int64), n_tasks, n_annotators)
    n_kept = int(np.count_nonzero(last))
    if n_kept == last.shape[0]:
        return idx
    kept = np.flatnonzero(last)
    if idx is not None:
        kept = idx[kept]
    notes.append(f"kept the latest of repeated judgments: dropped {last.shape[0] - n_kept}")
    return kept


def _label_codes(raw: np.ndarray, gold_task: np.ndarray | None, *, relevant_from: int | None,
                 scale: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(classes, label codes, gold codes): binary relevance from ``relevant_from``, else
    indices into the label ``scale`` (default: the values seen)."""
    if relevant_from is not None:
        values = np.array([0, 1], dtype=np.int64)
        label = (raw >= relevant_from).astype(np.int64)
        if gold_task is not None:
            gold_task = np.where(
                gold_task == UNKNOWN, UNKNOWN, (gold_task >= relevant_from).astype(np.int64)
            )
    else:
        if scale is not None:
            values = scale
            if not np.isin(raw, values).all():
                raise ValueError("a label is outside the label scale")
            if gold_task is not None:
                gold_task = np.where(np.isin(gold_task, values), gold_task, UNKNOWN)
        else:
            known_gold = [] if gold_task is None else [gold_task[gold_task >= 0]]
            values = np.unique(np.concatenate([raw, *known_gold]))
        label = np.searchsorted(values, raw).astype(np.int64)
        if gold_task is not None:
            gold_task = np.where(
                gold_task == UNKNOWN, UNKNOWN, np.searchsorted(values, gold_task)
            ).astype(np.int64)
    if values.shape[0] < 2:
        raise ValueError("graded labels need at least two label values: pass the scale")
    return values, label, gold_task


def _encode(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes over the sorted distinct values (vectorised; first-seen order needs a dict)."""
    uniq, codes = np.unique(values.astype(str), return_inverse=True)
    return codes.astype(np.int64), uniq
