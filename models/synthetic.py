"""Synthetic crowd judgments after the thesis' Algorithm 10 (ch. 4, §4.6.3).

Tasks: class y_i in {-1, +1} with equal probability; features x_i ~ N(μ_y, I) with
μ_{+1} = [1, 0], μ_{-1} = [0, 1]; task noise variance σ_i² = ||x_i − μ_{y_i}||².
Annotators: noise variance σ_j² ~ U(noise_level); chosen for a task by a power law
P(j) ∝ 1 / j^α (α = 1.5), ``redundancy`` (β) distinct annotators per task.
Judgment: label = 1 when y_i + ε > 0 with ε ~ N(0, σ_i² + σ_j²), else 0.

Graded extension (``grades`` K > 2, ``crowdqrels synth --grades K``): the true grade t_i is uniform
on {0, …, K−1}, its feature mean μ_t = [t/(K−1), 1 − t/(K−1)] (the two binary means at the ends,
the others between them), its latent location c_t = 2t − (K−1) (±1 for K = 2) and the judgment
the grade whose cell of the midpoints c_t + 1 holds c_{t_i} + b_j + ε: spacing 2 between grades,
as between the binary classes, so the noise levels keep their meaning. ``bias_sd`` plants a
per-annotator bias b_j ~ N(0, bias_sd²) (leniency > 0); 0 (the default) draws none, and K = 2
with no bias is Algorithm 10 draw for draw.

Topics (``topics`` T > 1, ``crowdqrels synth --topics T``): a test collection's topics differ in
how many of their documents are relevant (RF10's 100 topics: from 16 % to 100 % of a topic's
NIST-graded documents). The tasks are split into T topics of near-equal size (in order), each
topic g has its own grade mix ρ_g ~ Dirichlet(``topic_concentration`` · 1_K), and a task's true
grade is drawn from its topic's mix instead of uniformly (small concentrations: topics of mostly
one grade; large: every topic near uniform). T = 1 (the default) is the draw above, unchanged.
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
KINDS = ("llm", "crowd", "expert")  # the annotator kinds of the service (PUT …/judges?kind=)


@dataclass(frozen=True)
class SyntheticData:
    task: np.ndarray  # (n_judgments,) task index
    annotator: np.ndarray  # (n_judgments,) annotator index
    label: np.ndarray  # (n_judgments,) grade 0..K−1 (0/1 for binary)
    features: np.ndarray  # (n_tasks, 2)
    truth: np.ndarray  # (n_tasks,) grade 0..K−1
    task_noise: np.ndarray  # (n_tasks,) σ_i²
    annotator_noise: np.ndarray  # (n_annotators,) σ_j²
    annotator_bias: np.ndarray | None = None  # (n_annotators,) b_j, when planted
    n_grades: int = 2
    topic: np.ndarray | None = None  # (n_tasks,) topic index, when there are several
    topic_mix: np.ndarray | None = None  # (n_topics, K) each topic's planted grade mix ρ_g
    kind: np.ndarray | None = None  # (n_annotators,) llm | crowd | expert, on mixed data

    @property
    def topic_names(self) -> list[str]:
        """The topics' ids: ``t0`` … ``t9``, or zero-padded (``t00`` … ``t11``) so that their
        order as text is their order (a loader sorts tasks by topic id)."""
        n = 0 if self.topic_mix is None else self.topic_mix.shape[0]
        width = len(str(max(n - 1, 0)))
        return [f"t{g:0{width}d}" for g in range(n)]

    @property
    def topic_ids(self) -> np.ndarray:
        """Each task's topic: ``synth`` with one topic, its topic's id with several."""
        if self.topic is None:
            return np.full(self.truth.shape[0], TOPIC)
        return np.array(self.topic_names)[self.topic]

    @property
    def doc_ids(self) -> np.ndarray:
        return np.array([f"d{i}" for i in range(self.truth.shape[0])])

    @property
    def annotator_ids(self) -> np.ndarray:
        """``a0`` … on one kind of annotator; on mixed data the kind's initial and the index
        within the kind (``l0`` … LLM judges, ``c0`` … crowd workers, ``e0`` … experts)."""
        if self.kind is None:
            return np.array([f"a{j}" for j in range(self.annotator_noise.shape[0])])
        out, seen = [], dict.fromkeys(KINDS, 0)
        for k in self.kind.tolist():
            out.append(f"{k[0]}{seen[k]}")
            seen[k] += 1
        return np.array(out)

    def to_annotation_data(self, *, with_features: bool = True) -> AnnotationData:
        """AnnotationData with gold = truth and (optionally) the 2-D features attached."""
        return AnnotationData(
            task=self.task.astype(np.int64),
            annotator=self.annotator.astype(np.int64),
            label=self.label.astype(np.int64),
            topic_ids=self.topic_ids,
            doc_ids=self.doc_ids,
            annotator_ids=self.annotator_ids,
            classes=np.arange(self.n_grades),
            gold=self.truth.astype(np.int64),
            features=self.features if with_features else None,
        )

    def write(self, directory: Path) -> dict[str, Path]:
        """Write judgments.tsv, features.tsv, gold.qrels, annotators.tsv and tasks.tsv (and, with
        several topics, topics.tsv: each topic's planted grade mix)."""
        directory.mkdir(parents=True, exist_ok=True)
        docs = self.doc_ids
        topics = self.topic_ids
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
                f.write(f"{topics[t]}\t{docs[t]}\t{anns[a]}\t{y}\n")
        with paths["features"].open("w") as f:
            f.write("topic\tdoc\t" + "\t".join(f"f{k + 1}" for k in range(self.features.shape[1])))
            f.write("\n")
            for i, row in enumerate(self.features.tolist()):
                f.write(f"{topics[i]}\t{docs[i]}\t" + "\t".join(f"{v:.6f}" for v in row) + "\n")
        with paths["gold"].open("w") as f:
            for i, y in enumerate(self.truth.tolist()):
                f.write(f"{topics[i]} 0 {docs[i]} {y}\n")
        with paths["annotators"].open("w") as f:
            bias, kind = self.annotator_bias, self.kind
            f.write("annotator\tnoise_variance" + ("\tbias" if bias is not None else "")
                    + ("\tkind" if kind is not None else "") + "\n")
            for j, v in enumerate(self.annotator_noise.tolist()):
                extra = f"\t{bias[j]:.6f}" if bias is not None else ""
                extra += f"\t{kind[j]}" if kind is not None else ""
                f.write(f"{anns[j]}\t{v:.6f}{extra}\n")
        with paths["tasks"].open("w") as f:
            f.write("topic\tdoc\ttruth\tnoise_variance\n")
            for i, (y, v) in enumerate(zip(self.truth.tolist(), self.task_noise.tolist(),
                                           strict=True)):
                f.write(f"{topics[i]}\t{docs[i]}\t{y}\t{v:.6f}\n")
        if self.topic_mix is not None:
            paths["topics"] = directory / "topics.tsv"
            with paths["topics"].open("w") as f:
                f.write("topic\ttasks\t" + "\t".join(f"p_{k}" for k in range(self.n_grades))
                        + "\n")
                sizes = np.bincount(self.topic, minlength=self.topic_mix.shape[0])
                for name, size, mix in zip(self.topic_names, sizes.tolist(),
                                           self.topic_mix.tolist(), strict=True):
                    f.write(f"{name}\t{size}\t" + "\t".join(f"{v:.6f}" for v in mix) + "\n")
        return paths


def generate(
    n_tasks: int = 1000,
    n_annotators: int = 50,
    *,
    noise_level: tuple[float, float] = (0.0, 2.0),
    redundancy: int = 5,
    alpha: float = 1.5,
    grades: int = 2,
    bias_sd: float = 0.0,
    topics: int = 1,
    topic_concentration: float = 1.0,
    random_state: int | None = None,
) -> SyntheticData:
    """Draw one data set of Algorithm 10 (graded with ``grades`` > 2, biased with ``bias_sd`` > 0,
    on ``topics`` topics with their own grade mixes when > 1); deterministic for a given
    ``random_state``."""
    if not 1 <= redundancy <= n_annotators:
        raise ValueError("redundancy must be between 1 and the number of annotators")
    low, high = noise_level
    if not 0 <= low <= high:
        raise ValueError("noise_level must be an interval (low, high) with 0 <= low <= high")
    if grades < 2:
        raise ValueError("grades must be at least 2")
    if bias_sd < 0:
        raise ValueError("bias_sd must be >= 0")
    if not 1 <= topics <= n_tasks:
        raise ValueError("topics must be between 1 and the number of tasks")
    if not topic_concentration > 0:
        raise ValueError("topic_concentration must be > 0")
    rng = np.random.default_rng(random_state)
    topic = mix = None
    if topics == 1:
        truth = rng.integers(0, grades, size=n_tasks)
    else:
        topic = np.arange(n_tasks) * topics // n_tasks  # near-equal blocks, in order
        mix = rng.dirichlet(np.full(grades, topic_concentration), size=topics)
        below = np.cumsum(mix, axis=1)[:, :-1]  # P(grade <= k) for k < K − 1, per topic
        truth = (rng.random(n_tasks)[:, None] >= below[topic]).sum(axis=1)
    share = truth / (grades - 1)
    means = np.column_stack([share, 1.0 - share])
    features = means + rng.standard_normal((n_tasks, 2))
    task_noise = np.sum((features - means) ** 2, axis=1)
    annotator_noise = rng.uniform(low, high, size=n_annotators)

    weights = 1.0 / np.arange(1, n_annotators + 1) ** alpha
    chosen = _distinct_power_law(rng, weights / weights.sum(), n_tasks, redundancy)
    task = np.repeat(np.arange(n_tasks), redundancy)
    annotator = chosen.ravel()
    sd = np.sqrt(task_noise[task] + annotator_noise[annotator])
    location = 2.0 * truth[task] - (grades - 1)  # ±1 for binary
    z = location + sd * rng.standard_normal(task.shape[0])
    bias = None
    if bias_sd > 0:
        bias = bias_sd * rng.standard_normal(n_annotators)
        z += bias[annotator]
    cuts = 2.0 * np.arange(grades - 1) - (grades - 2)  # midpoints between locations (0 binary)
    label = np.searchsorted(cuts, z, side="left").astype(np.int64)
    return SyntheticData(task, annotator, label, features, truth, task_noise, annotator_noise,
                         bias, grades, topic, mix)


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


JUDGE_PRIOR = (0.55, 0.25, 0.12, 0.08)  # a skewed grade mix: most passages not relevant


def judges_dataset(
    n_tasks: int = 1000,
    n_judges: int = 12,
    *,
    grades: int = 4,
    class_prior: tuple[float, ...] | None = None,
    judge_correlation: float = 0.6,
    leniency: float = 0.5,
    n_families: int = 3,
    noise: float = 0.8,
    random_state: int | None = None,
) -> SyntheticData:
    """LLM-judge-like data: every judge grades every task, the judges share errors and a
    leniency bias (``crowdqrels synth --judges K``).

    Truth t_i ~ ``class_prior`` (default: a skewed mix, most tasks grade 0) with expert gold.
    Judge j perceives  z_ij = t_i + B + b_j + e_ij  and answers the grade whose cell of the
    midpoints t + ½ holds z_ij (clipped to the scale). B = ``leniency`` is shared by every judge
    (> 0: lenient), b_j ~ N(0, 0.2²) its own. The error e_ij has variance s_j² (s_j ~
    ``noise`` · U(0.7, 1.3)), of which the share ``judge_correlation`` R is shared: half by
    every judge (a latent u_i of the task: a passage that *looks* relevant) and half by the
    judge's family (v_{i,f(j)}, ``n_families`` families: same model, same prompt); the rest is
    the judge's own. Judges are assigned to families in turn (j mod n_families).
    """
    if grades < 2 or n_judges < 1 or n_tasks < 1:
        raise ValueError("grades must be at least 2, n_judges and n_tasks at least 1")
    if not 0.0 <= judge_correlation < 1.0:
        raise ValueError("judge_correlation must be in [0, 1)")
    if n_families < 1 or noise <= 0:
        raise ValueError("n_families must be >= 1 and noise > 0")
    prior = np.asarray(class_prior if class_prior is not None else
                       (JUDGE_PRIOR if grades == 4 else np.full(grades, 1.0 / grades)), float)
    if prior.shape != (grades,) or np.any(prior < 0) or not np.isclose(prior.sum(), 1.0):
        raise ValueError("class_prior must be a distribution over the grades")
    rng = np.random.default_rng(random_state)
    truth = rng.choice(grades, size=n_tasks, p=prior)
    share = truth / (grades - 1)
    means = np.column_stack([share, 1.0 - share])
    features = means + rng.standard_normal((n_tasks, 2))
    spread = noise * rng.uniform(0.7, 1.3, size=n_judges)
    bias = leniency + 0.2 * rng.standard_normal(n_judges)
    family = np.arange(n_judges) % n_families
    shared = rng.standard_normal(n_tasks)  # u_i
    by_family = rng.standard_normal((n_tasks, n_families))  # v_{i,f}
    own = rng.standard_normal((n_tasks, n_judges))
    r = judge_correlation
    e = (np.sqrt(r / 2) * (shared[:, None] + by_family[:, family])
         + np.sqrt(1 - r) * own) * spread[None, :]
    z = truth[:, None] + bias[None, :] + e
    label = np.clip(np.floor(z + 0.5), 0, grades - 1).astype(np.int64)
    task = np.repeat(np.arange(n_tasks), n_judges)
    annotator = np.tile(np.arange(n_judges), n_tasks)
    return SyntheticData(task, annotator, label.ravel(), features, truth,
                         np.sqrt(r / 2) * shared, spread**2, bias, grades)


def crowd_dataset(
    n_tasks: int = 2000,
    n_annotators: int = 100,
    *,
    grades: int = 2,
    class_prior: tuple[float, ...] | None = None,
    redundancy: int = 3,
    accuracy: tuple[float, float] = (0.6, 0.95),
    spammer_share: float = 0.15,
    alpha: float = 1.0,
    random_state: int | None = None,
) -> SyntheticData:
    """A sparse crowd with a skewed class mix (``crowdqrels synth --class-prior``): ``redundancy``
    judgments per task by distinct workers drawn by a power law (exponent ``alpha``: a few workers
    do most tasks). Truth t_i ~ ``class_prior`` (default 88 / 12 for two grades, else a mix
    decreasing with the grade). A worker answers right with probability a_j ~ U(``accuracy``),
    otherwise a grade next to the truth (ordinal errors) with probability ¾, any other grade
    uniformly else; a share ``spammer_share`` of the workers answer every task with one grade
    drawn from their own random distribution, whatever the truth.
    """
    if grades < 2 or not 1 <= redundancy <= n_annotators:
        raise ValueError("grades must be >= 2 and redundancy between 1 and n_annotators")
    if class_prior is None:
        class_prior = ((0.88, 0.12) if grades == 2 else
                       tuple(np.arange(grades, 0, -1) / np.arange(grades, 0, -1).sum()))
    prior = np.asarray(class_prior, float)
    if prior.shape != (grades,) or np.any(prior < 0) or not np.isclose(prior.sum(), 1.0):
        raise ValueError("class_prior must be a distribution over the grades")
    rng = np.random.default_rng(random_state)
    truth = rng.choice(grades, size=n_tasks, p=prior)
    share = truth / (grades - 1)
    means = np.column_stack([share, 1.0 - share])
    features = means + rng.standard_normal((n_tasks, 2))
    acc = rng.uniform(*accuracy, size=n_annotators)
    # each worker's confusion matrix: right with a_j, else a neighbour (3/4) or any grade
    conf = np.empty((n_annotators, grades, grades))
    for t in range(grades):
        near = np.zeros(grades)
        for d in (t - 1, t + 1):
            if 0 <= d < grades:
                near[d] = 1.0
        near /= near.sum()
        far = np.ones(grades)
        far[t] = 0.0
        far /= far.sum()
        wrong = 0.75 * near + 0.25 * far
        conf[:, t, :] = (1 - acc)[:, None] * wrong[None, :]
        conf[:, t, t] = acc
    spammers = rng.random(n_annotators) < spammer_share
    conf[spammers] = rng.dirichlet(np.ones(grades), size=int(spammers.sum()))[:, None, :]
    weights = 1.0 / np.arange(1, n_annotators + 1) ** alpha
    chosen = _distinct_power_law(rng, weights / weights.sum(), n_tasks, redundancy)
    task = np.repeat(np.arange(n_tasks), redundancy)
    annotator = chosen.ravel()
    cum = np.cumsum(conf[annotator, truth[task]], axis=1)
    label = (rng.random(task.shape[0])[:, None] >= cum[:, :-1]).sum(axis=1).astype(np.int64)
    return SyntheticData(task, annotator, label, features, truth, np.zeros(n_tasks),
                         1.0 - acc, None, grades)


def mixed_dataset(
    n_tasks: int = 1500,
    n_judges: int = 12,
    *,
    grades: int = 4,
    class_prior: tuple[float, ...] | None = None,
    judge_correlation: float = 0.6,
    leniency: float = 0.5,
    n_families: int = 3,
    noise: float = 0.8,
    crowd_workers: int = 100,
    crowd_redundancy: int = 3,
    crowd_noise: tuple[float, float] = (0.0, 2.0),
    alpha: float = 1.5,
    experts: int = 3,
    expert_share: float = 0.1,
    expert_noise: float = 0.3,
    random_state: int | None = None,
) -> SyntheticData:
    """Crowd, LLM judges and experts on the same tasks (``crowdqrels synth --judges K --crowd N
    --experts E``): the collection users build now.

    - LLM judges: ``judges_dataset`` (its truth, drawn from ``class_prior``, is everyone's):
      ``n_judges`` judges on every task, sharing errors (``judge_correlation``, ``n_families``)
      and a leniency ``leniency``.
    - Crowd: Algorithm 10 on the grade scale (``generate``'s graded extension in grade units):
      ``crowd_redundancy`` distinct workers per task out of ``crowd_workers``, drawn by a power
      law (exponent ``alpha``); worker j perceives z = t_i + ε, ε ~ N(0, (σ_i² + σ_j²) / 4), σ_i²
      the task's feature noise, σ_j² ~ U(``crowd_noise``) (the /4: Algorithm 10 spaces its
      classes 2 apart, the grades here 1), unbiased, errors independent. 0 workers: no crowd.
    - Experts: ``experts`` assessors, z = t_i + ε, ε ~ N(0, s²), s ~ ``expert_noise`` · U(0.7, 1.3)
      (exact accuracy near .9 at the default 0.3), unbiased and independent; one expert (drawn
      uniformly) on each task of a random share ``expert_share`` of the tasks. 0: no experts.

    Annotators are numbered judges, then workers, then experts; ``kind`` holds each one's kind
    (ids ``l0`` …, ``c0`` …, ``e0`` …; annotators.tsv has a ``kind`` column). A worker or expert
    drawn for no task stays in the listing with no judgment.
    """
    if crowd_workers < 0 or experts < 0:
        raise ValueError("crowd_workers and experts must be >= 0")
    if crowd_workers and not 1 <= crowd_redundancy <= crowd_workers:
        raise ValueError("crowd_redundancy must be between 1 and crowd_workers")
    low, high = crowd_noise
    if not 0 <= low <= high:
        raise ValueError("crowd_noise must be an interval (low, high) with 0 <= low <= high")
    if not 0.0 <= expert_share <= 1.0 or expert_noise <= 0:
        raise ValueError("expert_share must be in [0, 1] and expert_noise > 0")
    panel_seed, crowd_seed, expert_seed = np.random.SeedSequence(random_state).spawn(3)
    panel = judges_dataset(n_tasks, n_judges, grades=grades, class_prior=class_prior,
                           judge_correlation=judge_correlation, leniency=leniency,
                           n_families=n_families, noise=noise,
                           random_state=int(panel_seed.generate_state(1)[0]))
    truth, k = panel.truth, grades
    share = truth / (k - 1)
    task_noise = np.sum((panel.features - np.column_stack([share, 1.0 - share])) ** 2, axis=1)
    tasks, annotators, labels = [panel.task], [panel.annotator], [panel.label]
    noise_var = [panel.annotator_noise]
    bias = [panel.annotator_bias]

    def grade(z: np.ndarray) -> np.ndarray:
        return np.clip(np.floor(z + 0.5), 0, k - 1).astype(np.int64)

    if crowd_workers:
        rng = np.random.default_rng(crowd_seed)
        worker_noise = rng.uniform(low, high, size=crowd_workers)
        weights = 1.0 / np.arange(1, crowd_workers + 1) ** alpha
        chosen = _distinct_power_law(rng, weights / weights.sum(), n_tasks, crowd_redundancy)
        task = np.repeat(np.arange(n_tasks), crowd_redundancy)
        worker = chosen.ravel()
        sd = np.sqrt(task_noise[task] + worker_noise[worker]) / 2.0
        tasks.append(task)
        annotators.append(n_judges + worker)
        labels.append(grade(truth[task] + sd * rng.standard_normal(task.shape[0])))
        noise_var.append(worker_noise / 4.0)
        bias.append(np.zeros(crowd_workers))
    n_expert_tasks = int(round(expert_share * n_tasks)) if experts else 0
    if experts:
        rng = np.random.default_rng(expert_seed)
        spread = expert_noise * rng.uniform(0.7, 1.3, size=experts)
        task = np.sort(rng.choice(n_tasks, size=n_expert_tasks, replace=False))
        who = rng.integers(0, experts, size=n_expert_tasks)
        tasks.append(task)
        annotators.append(n_judges + crowd_workers + who)
        labels.append(grade(truth[task] + spread[who] * rng.standard_normal(task.shape[0])))
        noise_var.append(spread**2)
        bias.append(np.zeros(experts))
    kind = np.array(["llm"] * n_judges + ["crowd"] * crowd_workers + ["expert"] * experts)
    return SyntheticData(np.concatenate(tasks), np.concatenate(annotators),
                         np.concatenate(labels), panel.features, truth, task_noise,
                         np.concatenate(noise_var), np.concatenate(bias), grades, kind=kind)
