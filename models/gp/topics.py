"""Topics as an input of the GP's mean, in numpy: the codes the fit and its predictors share.

The fit (``models.gp.topic_mean``) gives each topic an offset c_t ~ N(0, TOPIC_PRIOR_VARIANCE);
a task's topic enters its inputs as a code, the topic's index among the fit's sorted topics, and
a topic the fit never saw gets code ``len(topics)``: the prior's offset 0 and its variance.
"""

from __future__ import annotations

import numpy as np

TOPIC_PRIOR_VARIANCE = 1.0


def topic_codes(topic_ids: np.ndarray | list[str], topics: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """(code per row as float, seen mask): each topic's index in the sorted ``topics``, and
    ``len(topics)`` for a topic not among them."""
    ids = np.asarray(topic_ids, dtype=object).astype(str)
    topics = np.asarray(topics).astype(str)
    position = np.searchsorted(topics, ids)
    inside = position < topics.shape[0]
    seen = np.zeros(ids.shape[0], dtype=bool)
    seen[inside] = topics[position[inside]] == ids[inside]
    return np.where(seen, position, topics.shape[0]).astype(np.float64), seen


def row_codes(topic_ids: np.ndarray | list[str] | None, topics: np.ndarray, n: int
              ) -> tuple[np.ndarray, np.ndarray]:
    """``topic_codes`` for n new tasks whose topics may be missing (None: every row unseen);
    a list of another length than n is a ValueError."""
    if topic_ids is None:
        return np.full(n, float(len(topics))), np.zeros(n, dtype=bool)
    if len(topic_ids) != n:
        raise ValueError(f"give one topic per task: {len(topic_ids)} topics for {n} tasks")
    return topic_codes(topic_ids, topics)
