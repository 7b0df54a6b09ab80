"""A per-topic intercept in the GP's mean beside the features: m(x_i) + c_t(i).

A test collection is built topic by topic, and its topics differ in how much of what is judged is
relevant (RF10: from 16 % to 100 % of a topic's NIST-graded documents). Task features rarely say
which topic a document answers, so one mean function for the collection pulls every topic's
uncertain tasks to the collection's average. Here each topic t gets an offset c_t with the prior
N(0, ``TOPIC_PRIOR_VARIANCE``) (probit units: ±2 spans 2 % to 98 % relevant), learned in the M
step with the other mean parameters (MAP), as the linear mean's weights are.

The topic rides along with the features as one extra input column holding the topic's code (its
index in the fit's sorted topics), which the kernels never see (their ``active_dims`` name the
feature columns), so every gather of task inputs (the M step's subsets, prediction) keeps it.
Code ``n_topics`` stands for a topic the fit never saw: offset 0, the prior mean; prediction adds
the prior variance for it (``models.gp.topics``, numpy only, which the API's predictor uses too).
A TensorFlow module: imported inside ``fit`` only.
"""

from __future__ import annotations

import gpflow
import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp

from models.gp.topics import TOPIC_PRIOR_VARIANCE


class TopicMean(gpflow.functions.MeanFunction):
    """m(x[:, :d]) + c[x[:, d]] with c ~ N(0, TOPIC_PRIOR_VARIANCE) per topic; ``base`` None: 0."""

    def __init__(self, base: gpflow.functions.MeanFunction | None, d: int, n_topics: int) -> None:
        super().__init__()
        dtype = gpflow.default_float()
        self.base = base
        self.d = d
        self.n_topics = n_topics
        self.offsets = gpflow.Parameter(
            np.zeros(n_topics), name="topic_offsets",
            prior=tfp.distributions.Normal(tf.constant(0.0, dtype),
                                           tf.constant(np.sqrt(TOPIC_PRIOR_VARIANCE), dtype)),
        )

    def __call__(self, X: tf.Tensor) -> tf.Tensor:
        code = tf.cast(tf.round(X[:, self.d]), tf.int32)
        offsets = tf.concat([tf.convert_to_tensor(self.offsets),
                             tf.zeros(1, dtype=gpflow.default_float())], axis=0)
        mean = tf.gather(offsets, code)[:, None]
        if self.base is not None:
            mean += self.base(X[:, : self.d])
        return mean
