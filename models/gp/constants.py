"""Constants shared by the GP modules without importing TensorFlow."""

# Gauss-Hermite points of the 1-D expectation per judgment.
DEFAULT_QUADRATURE_POINTS = 12
