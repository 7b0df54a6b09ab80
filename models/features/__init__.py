"""Task features from topic texts, document texts and submitted runs (thesis §4.4.4).

``build_features(tasks, topic_texts=..., doc_texts=..., runs=...)`` is the entry point; the
semantic group (:mod:`models.features.embeddings`) is imported only when asked for, since its
model is an optional dependency (``pip install 'crowdqrels[embeddings]'``).
"""

from models.features.build import GROUPS, TaskFeatures, build_features
from models.features.lexical import LEXICAL_FEATURES, CollectionIndex, lexical_features
from models.features.ranking import ranking_feature_names, ranking_features
from models.features.tokenize import Analyzer

__all__ = [
    "GROUPS",
    "LEXICAL_FEATURES",
    "Analyzer",
    "CollectionIndex",
    "TaskFeatures",
    "build_features",
    "lexical_features",
    "ranking_feature_names",
    "ranking_features",
]
