"""CPU seconds and trace counts of small GP fits, as the tests run them (issue 36, gpspeed3).

    python bench/gp_small_fits.py ord|magp|ord600 [repeats] [--profile]

``ord``: the 400-task OrdinalGP fit of tests/models/gp/test_ordinal_gp.py::
test_topic_offsets_beside_features (full GP); ``magp``: MAGP's defaults on 300 tasks (full GP);
``ord600``: the first 600-task fit of test_fitted_competence_follows_accuracy_against_gold
(sparse). Prints, per fit, CPU seconds (user + system), how many times each compiled step
traced, the accuracy and the largest probability; saves the probabilities to
/tmp/gp_small_fits_<which>_<TAG>_<repeat>.npy (TAG from the environment) for comparisons.
Not part of the test run.
"""

from __future__ import annotations

import collections
import functools
import os
import resource
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import models.gp.training as training  # noqa: E402
from models.gp.model import MAGP  # noqa: E402
from models.gp.ordinal import OrdinalGP  # noqa: E402
from models.synthetic import generate  # noqa: E402

traces: collections.Counter[str] = collections.Counter()
_compiled = training._compiled


def _counting(fn, reduce_retracing=False):  # noqa: ANN001, ANN202 - wraps tf.function
    name = getattr(fn, "__name__", str(fn))

    @functools.wraps(fn)
    def traced(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202 - runs once per trace
        traces[name] += 1
        return fn(*args, **kwargs)

    return _compiled(traced, reduce_retracing=reduce_retracing)


training._compiled = _counting
try:
    import models.gp.ordinal_likelihood as ordinal_likelihood

    if hasattr(ordinal_likelihood, "_compiled"):
        ordinal_likelihood._compiled = _counting
except ImportError:
    pass


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    which = sys.argv[1]
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2].isdigit() else 2
    if which == "ord":
        synth = generate(400, 25, noise_level=(4.0, 8.0), redundancy=3, grades=3, bias_sd=0.3,
                         topics=8, topic_concentration=0.5, random_state=5)
        make = lambda: OrdinalGP(n_iter=6, m_step_iterations=6, random_state=0)  # noqa: E731
    elif which == "ord600":
        synth = generate(600, 30, noise_level=(0.0, 1.0), redundancy=5, grades=3, bias_sd=1.0,
                         random_state=1)
        make = lambda: OrdinalGP(n_iter=8, random_state=0)  # noqa: E731
    else:
        synth = generate(300, 25, noise_level=(2.0, 4.0), redundancy=3, random_state=5)
        make = lambda: MAGP(random_state=0)  # noqa: E731
    data = synth.to_annotation_data(with_features=True)
    for repeat in range(repeats):
        traces.clear()
        start = _cpu()
        if "--profile" in sys.argv:
            import cProfile
            import pstats

            profile = cProfile.Profile()
            profile.enable()
        model = make().fit(data)
        if "--profile" in sys.argv:
            profile.disable()
            pstats.Stats(profile).sort_stats("cumulative").print_stats(40)
        print(f"fit {repeat}: CPU {_cpu() - start:.2f} s\ttraces {dict(traces)}\t"
              f"accuracy {np.mean(model.labels_ == synth.truth):.4f}")
        np.save(f"/tmp/gp_small_fits_{which}_{os.environ.get('TAG', 'x')}_{repeat}.npy",
                model.proba_)


if __name__ == "__main__":
    main()
