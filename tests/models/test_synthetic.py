"""The Algorithm-10 generator: determinism, shapes, and its files read back by the loader."""

from __future__ import annotations

import numpy as np

from app.cli.loading import load_annotation_data
from models.synthetic import NOISE_LEVELS, generate


def test_deterministic_and_well_formed() -> None:
    a = generate(300, 20, noise_level=NOISE_LEVELS["4-8"], redundancy=4, random_state=5)
    b = generate(300, 20, noise_level=NOISE_LEVELS["4-8"], redundancy=4, random_state=5)
    np.testing.assert_array_equal(a.label, b.label)
    assert a.task.shape == (1200,)
    assert np.all((a.annotator_noise >= 4) & (a.annotator_noise <= 8))
    # Distinct annotators per task.
    pairs = a.task * 100 + a.annotator
    assert np.unique(pairs).shape[0] == pairs.shape[0]


def test_noise_lowers_majority_vote_accuracy() -> None:
    def mv_accuracy(level: str) -> float:
        s = generate(2000, 50, noise_level=NOISE_LEVELS[level], random_state=1)
        data = s.to_annotation_data()
        votes = data.counts()
        return float(np.mean(np.argmax(votes, axis=1) == s.truth))

    assert mv_accuracy("0-2") > mv_accuracy("8-12") + 0.05


def test_written_files_load_back(tmp_path) -> None:  # type: ignore[no-untyped-def]
    s = generate(50, 10, random_state=2)
    paths = s.write(tmp_path)
    data = load_annotation_data(paths["judgments"].read_bytes(),
                                gold_qrels=paths["gold"].read_bytes(),
                                features=paths["features"].read_bytes())
    direct = s.to_annotation_data()
    order = np.argsort(direct.doc_ids)  # the loader sorts tasks by id
    assert data.doc_ids.tolist() == direct.doc_ids[order].tolist()
    assert data.gold is not None
    np.testing.assert_array_equal(data.gold, s.truth[order])
    assert data.features is not None
    np.testing.assert_allclose(data.features, s.features[order], atol=1e-6)
    np.testing.assert_array_equal(data.counts(), direct.counts()[order])


def test_topics_plant_their_own_grade_mixes(tmp_path) -> None:  # type: ignore[no-untyped-def]
    one = generate(400, 20, grades=3, random_state=3)
    same = generate(400, 20, grades=3, topics=1, topic_concentration=0.2, random_state=3)
    np.testing.assert_array_equal(one.label, same.label)  # one topic: Algorithm 10 unchanged
    assert one.topic is None and set(one.topic_ids) == {"synth"}

    s = generate(6000, 50, grades=3, topics=6, topic_concentration=0.5, random_state=4)
    again = generate(6000, 50, grades=3, topics=6, topic_concentration=0.5, random_state=4)
    np.testing.assert_array_equal(s.label, again.label)
    assert s.topic_mix is not None and s.topic_mix.shape == (6, 3)
    np.testing.assert_allclose(s.topic_mix.sum(axis=1), 1.0)
    assert s.topic is not None and np.bincount(s.topic).tolist() == [1000] * 6
    for g in range(6):  # each topic's grades follow its own mix (1,000 tasks: within 0.05)
        seen = np.bincount(s.truth[s.topic == g], minlength=3) / 1000
        np.testing.assert_allclose(seen, s.topic_mix[g], atol=0.05)
    assert np.ptp(s.topic_mix[:, 0]) > 0.3  # concentration 0.5: the topics differ

    paths = s.write(tmp_path)
    data = load_annotation_data(paths["judgments"].read_bytes(),
                                gold_qrels=paths["gold"].read_bytes(), graded=True)
    assert sorted(set(data.topic_ids)) == [f"t{g}" for g in range(6)]
    loaded = dict(zip(data.doc_ids.tolist(), zip(data.topic_ids.tolist(), data.gold.tolist(),
                                                 strict=True), strict=True))
    assert loaded == dict(zip(s.doc_ids.tolist(), zip(s.topic_ids.tolist(), s.truth.tolist(),
                                                      strict=True), strict=True))
    rows = paths["topics"].read_text().splitlines()
    assert rows[0] == "topic\ttasks\tp_0\tp_1\tp_2" and len(rows) == 7
    assert rows[1].split("\t")[:2] == ["t0", "1000"]


def test_judges_dataset_is_dense_correlated_and_lenient() -> None:
    from models.synthetic import judges_dataset

    s = judges_dataset(400, 6, judge_correlation=0.6, leniency=0.5, random_state=3)
    grades = s.label.reshape(400, 6)
    assert s.task.shape == (2400,) and np.bincount(s.task).min() == 6  # dense
    assert grades.mean() > s.truth.mean() + 0.3  # lenient
    resid = grades - s.truth[:, None]
    corr = np.corrcoef(resid.T)[np.triu_indices(6, 1)].mean()
    assert corr > 0.3  # shared errors
    plain = judges_dataset(400, 6, judge_correlation=0.0, leniency=0.0, random_state=3)
    r0 = np.corrcoef((plain.label.reshape(400, 6) - plain.truth[:, None]).T)
    assert r0[np.triu_indices(6, 1)].mean() < 0.1
    assert np.bincount(s.truth, minlength=4)[0] > 0.45 * 400  # skewed towards grade 0


def test_crowd_dataset_is_sparse_and_skewed() -> None:
    from models.synthetic import crowd_dataset

    s = crowd_dataset(1000, 60, random_state=4)
    assert s.task.shape == (3000,)
    assert 0.84 < float(np.mean(s.truth == 0)) < 0.92
    pairs = s.task * 100 + s.annotator
    assert np.unique(pairs).shape[0] == pairs.shape[0]


def test_mixed_dataset_puts_crowd_panel_and_experts_on_the_same_tasks(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from models.synthetic import mixed_dataset

    s = mixed_dataset(400, 6, crowd_workers=40, crowd_redundancy=3, experts=2,
                      expert_share=0.25, random_state=5)
    kind = s.kind[s.annotator]
    assert s.kind.tolist() == ["llm"] * 6 + ["crowd"] * 40 + ["expert"] * 2
    assert np.bincount(s.task[kind == "llm"]).tolist() == [6] * 400  # the panel: dense
    assert np.bincount(s.task[kind == "crowd"]).tolist() == [3] * 400  # the crowd: 3 a task
    assert np.unique(s.task[kind == "expert"]).shape == (100,)  # one expert on a quarter
    pairs = s.task * 100 + s.annotator
    assert np.unique(pairs).shape[0] == pairs.shape[0]  # nobody judges a task twice

    def exact(k: str) -> float:
        return float(np.mean(s.label[kind == k] == s.truth[s.task[kind == k]]))

    assert exact("expert") > 0.85 > exact("crowd") and exact("expert") > exact("llm")
    panel = s.label[kind == "llm"].reshape(400, 6)
    assert panel.mean() > s.truth.mean() + 0.3  # the panel stays lenient
    again = mixed_dataset(400, 6, crowd_workers=40, crowd_redundancy=3, experts=2,
                          expert_share=0.25, random_state=5)
    np.testing.assert_array_equal(again.label, s.label)
    ids = s.annotator_ids.tolist()
    assert ids[:2] == ["l0", "l1"] and ids[6] == "c0" and ids[-1] == "e1"
    paths = s.write(tmp_path)
    rows = [line.split("\t") for line in paths["annotators"].read_text().splitlines()]
    assert rows[0][-1] == "kind" and rows[1][-1] == "llm" and rows[-1][-1] == "expert"
    data = load_annotation_data(paths["judgments"].read_bytes(),
                                gold_qrels=paths["gold"].read_bytes())
    assert data.n_judgments == s.task.shape[0] and data.n_tasks == 400
    none = mixed_dataset(50, 3, crowd_workers=0, experts=0, random_state=1)
    assert set(none.kind.tolist()) == {"llm"} and none.task.shape == (150,)
