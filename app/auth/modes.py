"""When the service may run without access control."""

from __future__ import annotations

import ipaddress

from app.core.config import Settings


class InsecureMode(RuntimeError):
    """Refuse to start: auth off where other machines could reach the service."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_serve_mode(settings: Settings, host: str) -> str:
    """The start-up line about access control; InsecureMode when auth is off off-loopback.

    (Production with auth off never gets here: Settings refuses it.)
    """
    if settings.auth_required:
        return "access control: API keys required (CROWDQRELS_AUTH=required)"
    if not is_loopback(host):
        raise InsecureMode(
            f"refusing to serve on {host} with CROWDQRELS_AUTH=off: every endpoint would be "
            "open to anyone who can reach it. Set CROWDQRELS_AUTH=required and create a key "
            "with `crowdqrels keys create --name admin --scope admin`, or serve on 127.0.0.1.")
    return (f"access control: OFF (CROWDQRELS_AUTH=off, {settings.environment}) — open to "
            f"anyone who can reach {host}; set CROWDQRELS_AUTH=required to use API keys")
