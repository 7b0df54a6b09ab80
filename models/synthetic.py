"""Synthetic crowd judgments after the thesis' Algorithm 10 (ch. 4, §4.6.3).

Tasks: class y_i in {-1, +1} with equal probability; features x_i ~ N(μ_y, I) with
μ_{+1} = [1, 0], μ_{-1} = [0, 1]; task noise variance σ_i² = ||x_i − μ_{y_i}||².
Annotators: noise variance σ_j² ~ U(noise_level); chosen for a task by a power law
P(j) ∝ 1 / j^α (α = 1.5), ``redundancy`` (β) distinct annotators per task.
Judgment: label = 1 when y_i + ε > 0 with ε ~ N(0, σ_i² + σ_j²), else 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from models.data import AnnotationData

NOISE_LEVELS: dict[str, tuple[float, float]] = {
    "0-2": (0.0, 2.0),
    "2-4": (2.0, 4.0),
    "4-8": (4.0, 8.0),
    "8-12": (8.0, 12.0),
}
TOPIC = "synth"


@dataclass(frozen=True)
class SyntheticData:
    task: np.ndarray  # (n_judgments,) task index
    annotator: np.ndarray  # (n_judgments,) annotator index
    label: np.ndarray  # (n_judgments,) 0/1
    features: np.ndarray  # (n_tasks, 2)
    truth: np.ndarray  # (n_tasks,) 0/1
    task_noise: np.ndarray  # (n_tasks,) σ_i²
    annotator_noise: np.ndarray  # (n_annotators,) σ_j²

    @property
    def doc_ids(self) -> np.ndarray:
        return np.array([f"d{i}" for i in range(self.truth.shape[0])])

    @property
    def annotator_ids(self) -> np.ndarray:
        return np.array([f"a{j}" for j in range(self.annotator_noise.shape[0])])

    def to_annotation_data(self, *, with_features: bool = True) -> AnnotationData:
        """AnnotationData with gold = truth and (optionally) the 2-D features attached."""
        n = self.truth.shape[0]
        return AnnotationData(
            task=self.task.astype(np.int64),
            annotator=self.annotator.astype(np.int64),
            label=self.label.astype(np.int64),
            topic_ids=np.full(n, TOPIC),
            doc_ids=self.doc_ids,
            annotator_ids=self.annotator_ids,
            classes=np.array([0, 1]),
            gold=self.truth.astype(np.int64),
            features=self.features if with_features else None,
        )

    def write(self, directory: Path) -> dict[str, Path]:
        """Write judgments.tsv, features.tsv, gold.qrels, annotators.tsv and tasks.tsv."""
        directory.mkdir(parents=True, exist_ok=True)
        docs = self.doc_ids
        anns = self.annotator_ids
        paths = {
            "judgments": directory / "judgments.tsv",
            "features": directory / "features.tsv",
            "gold": directory / "gold.qrels",
            "annotators": directory / "annotators.tsv",
            "tasks": directory / "tasks.tsv",
        }
        with paths["judgments"].open("w") as f:
            f.write("topic\tdoc\tannotator\tlabel\n")
            for t, a, y in zip(self.task.tolist(), self.annotator.tolist(),
                               self.label.tolist(), strict=True):
                f.write(f"{TOPIC}\t{docs[t]}\t{anns[a]}\t{y}\n")
        with paths["features"].open("w") as f:
            f.write("topic\tdoc\t" + "\t".join(f"f{k + 1}" for k in range(self.features.shape[1])))
            f.write("\n")
            for i, row in enumerate(self.features.tolist()):
                f.write(f"{TOPIC}\t{docs[i]}\t" + "\t".join(f"{v:.6f}" for v in row) + "\n")
        with paths["gold"].open("w") as f:
            for i, y in enumerate(self.truth.tolist()):
                f.write(f"{TOPIC} 0 {docs[i]} {y}\n")
        with paths["annotators"].open("w") as f:
            f.write("annotator\tnoise_variance\n")
            for j, v in enumerate(self.annotator_noise.tolist()):
                f.write(f"{anns[j]}\t{v:.6f}\n")
        with paths["tasks"].open("w") as f:
            f.write("topic\tdoc\ttruth\tnoise_variance\n")
            for i, (y, v) in enumerate(zip(self.truth.tolist(), self.task_noise.tolist(),
                                           strict=True)):
                f.write(f"{TOPIC}\t{docs[i]}\t{y}\t{v:.6f}\n")
        return paths


def generate(
    n_tasks: int = 1000,
    n_annotators: int = 50,
    *,
    noise_level: tuple[float, float] = (0.0, 2.0),
    redundancy: int = 5,
    alpha: float = 1.5,
    random_state: int | None = None,
) -> SyntheticData:
    """Draw one data set of Algorithm 10; deterministic for a given ``random_state``."""
    if not 1 <= redundancy <= n_annotators:
        raise ValueError("redundancy must be between 1 and the number of annotators")
    low, high = noise_level
    if not 0 <= low <= high:
        raise ValueError("noise_level must be an interval (low, high) with 0 <= low <= high")
    rng = np.random.default_rng(random_state)
    truth = rng.integers(0, 2, size=n_tasks)
    means = np.where(truth[:, None] == 1, [1.0, 0.0], [0.0, 1.0])
    features = means + rng.standard_normal((n_tasks, 2))
    task_noise = np.sum((features - means) ** 2, axis=1)
    annotator_noise = rng.uniform(low, high, size=n_annotators)

    weights = 1.0 / np.arange(1, n_annotators + 1) ** alpha
    chosen = _distinct_power_law(rng, weights / weights.sum(), n_tasks, redundancy)
    task = np.repeat(np.arange(n_tasks), redundancy)
    annotator = chosen.ravel()
    sd = np.sqrt(task_noise[task] + annotator_noise[annotator])
    signed = np.where(truth[task] == 1, 1.0, -1.0)
    label = (signed + sd * rng.standard_normal(task.shape[0]) > 0).astype(np.int64)
    return SyntheticData(task, annotator, label, features, truth, task_noise, annotator_noise)


def _distinct_power_law(
    rng: np.random.Generator, p: np.ndarray, n_rows: int, k: int
) -> np.ndarray:
    """k distinct annotators per task drawn by ``p`` (sampling without replacement).

    Rejection on rows with a repeat keeps this O(n_rows * k); rows that still repeat after a few
    rounds (k close to the number of annotators) use the Gumbel top-k trick.
    """
    out = rng.choice(p.shape[0], size=(n_rows, k), p=p)
    for _ in range(20):
        srt = np.sort(out, axis=1)
        bad = np.flatnonzero((srt[:, 1:] == srt[:, :-1]).any(axis=1)) if k > 1 else []
        if len(bad) == 0:
            return out
        out[bad] = rng.choice(p.shape[0], size=(len(bad), k), p=p)
    logp = np.log(p)
    for row in bad:
        keys = logp + rng.gumbel(size=p.shape[0])
        out[row] = np.argpartition(-keys, k - 1)[:k]
    return out
