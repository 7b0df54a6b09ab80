"""The web dashboard: pages and forms (pages/, one module per domain), Plotly figure specs
(charts.py), HTML errors (errors.py), the signed messages after a form (messages.py), offline
API docs (docs.py) and the static assets (assets.py), all served by the API's own process;
how browsers may keep pages and assets (caching.py) is wired in app.main."""

from __future__ import annotations

from fastapi import FastAPI

from app.ui.assets import static_files
from app.ui.docs import install_docs
from app.ui.errors import register_ui_error_handlers
from app.ui.pages import router as pages_router
from app.ui.pages.collections import methods
from app.ui.templating import templates


def install_dashboard(app: FastAPI) -> None:
    """Pages, their HTML errors, /ui/static and the offline /docs and /redoc."""
    app.include_router(pages_router)
    # Compile every page template and import every method now (for the fit form's defaults)
    # rather than on the first request for a page (tens of ms each; no TensorFlow).
    for name in templates.env.list_templates():
        templates.env.get_template(name)
    methods()
    install_docs(app)
    app.mount("/ui/static", static_files(), name="ui-static")
    register_ui_error_handlers(app)
