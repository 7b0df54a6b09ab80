"""Evaluation: aggregated labels against gold (``gold``); retrieval runs scored on a qrels
posterior (``measures`` names, ``standard`` / ``recall`` / ``unjudged`` the measures,
``uncertainty`` draws and summaries, ``scoring`` the engine; docs/evaluation.md)."""

from models.evaluation.gold import Evaluation, evaluate, quadratic_kappa, relevant_index

__all__ = ["Evaluation", "evaluate", "quadratic_kappa", "relevant_index"]
