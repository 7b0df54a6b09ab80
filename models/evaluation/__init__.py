"""Evaluation: aggregated labels against gold (``gold``); more modules score retrieval runs."""

from models.evaluation.gold import Evaluation, evaluate, relevant_index

__all__ = ["Evaluation", "evaluate", "relevant_index"]
