"""The dashboard's pages and forms, one module per domain: collections (home, a collection's
page, the new-collection form), judgments (judgment and gold files), runs, aggregations (a fit:
start, cancel, results, a task), rejudging (the tasks to judge next), annotators (an annotator,
the comparison of fits), evaluations, samplings, admin (API keys, the audit log) and judges
(judging the judges). How a page is rendered is in render.py, how a form's fields are read
in fields.py.

Every page declares its scope and loads collection-owned rows through the API's load-or-404
dependencies, so the API's access rules apply. Forms carry the CSRF double-submit token and a
one-use key (app.ui.forms): a form sent twice is acted on once.
"""

from __future__ import annotations

from fastapi import APIRouter

from app.ui.pages import (
    admin,
    aggregations,
    annotators,
    collections,
    evaluations,
    judges,
    judgments,
    rejudging,
    runs,
    samplings,
)

router = APIRouter()
for _module in (collections, judgments, runs, aggregations, rejudging, annotators, evaluations,
                samplings, admin, judges):
    router.include_router(_module.router)
