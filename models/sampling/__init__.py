"""What to judge next: the re-judging order over tasks (rejudge), active sampling of documents
from runs with Horvitz–Thompson estimators (active, estimators) and the pooling baselines
(pooling). Pure NumPy: nothing here imports app/."""
