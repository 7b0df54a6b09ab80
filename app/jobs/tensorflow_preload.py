"""What the GP jobs' starter (``python -m app.jobs.starter --tensorflow``) imports before its
first fork: TensorFlow and GPflow, as a GP job would (quietly unless the service is verbose).

Only that starter's ``main`` imports this module; the API process and the plain starter never do
(the import contract "TensorFlow stays out of the API process" in pyproject.toml names this one
edge; tests/jobs/test_process_isolation.py checks the running API process).
"""

from __future__ import annotations


def preload_tensorflow() -> None:
    from app.core.config import get_settings
    from app.core.quiet import quiet_tensorflow

    if not get_settings().verbose:
        quiet_tensorflow(import_now=True)
    import gpflow  # noqa: F401
