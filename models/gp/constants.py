"""Constants shared by the GP modules without importing TensorFlow."""

# Gauss-Hermite points of the 1-D expectation per judgment.
DEFAULT_QUADRATURE_POINTS = 12

# Tasks the GP block of the M step (kernel, τ², mean function: a handful of hyperparameters) is
# fitted on when a collection has more (a random subset, redrawn every EM iteration). Each of its
# L-BFGS evaluations costs O(|S| M²) forward and about twice that backward; 5,000 tasks estimate
# the hyperparameters to ~1.4 % (1/√|S|) and cost a quarter of 20,000 (docs/gp.md, "Large
# collections": 20,000 tasks, accuracy .8942 against .8944; 200,000 tasks .8923 against .892).
M_STEP_MAX_TASKS = 5000
