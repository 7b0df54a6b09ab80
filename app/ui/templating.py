"""The dashboard's Jinja2 environment: app/ui/templates with the filters and globals that every
page uses."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from fastapi import Request
from fastapi.templating import Jinja2Templates

from app.auth.principal import OPEN, Principal
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


def header_context(request: Request) -> dict[str, Any]:
    """What every page's header needs (pages and error pages alike): whether access control is
    on (a sign-out link), the signed-in key (without access control: everyone, ``OPEN``; with
    it and no key yet: nobody) and the access-control pages it may open."""
    settings = getattr(request.app.state, "settings", None)
    access_control = bool(settings is not None and settings.auth_required)
    principal: Principal | None = getattr(request.state, "principal", None)
    if principal is None and not access_control:
        principal = OPEN
    return {"access_control": access_control,
            "may_manage_keys": principal is not None and principal.manages_keys(),
            "may_read_audit": principal is not None and principal.allows("admin")}
