"""The dashboard's Jinja2 environment: app/ui/templates with the filters and globals that every
page uses."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from fastapi.templating import Jinja2Templates

from app.ui.assets import asset_url

templates = Jinja2Templates(directory=Path(__file__).resolve().parent / "templates")


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return "–" if not math.isfinite(value) else f"{value:,.{digits}f}"
    return str(value)


def _when(value: Any) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S UTC") if value is not None else "–"


templates.env.filters["fmt"] = _fmt
templates.env.filters["when"] = _when
templates.env.filters["urlpart"] = lambda v: quote(str(v), safe="")
templates.env.globals["urlencode"] = urlencode
templates.env.globals["asset"] = asset_url
