"""The message a page shows after a form: what was done (``ok``) or why it was not (``error``).

A form's handler answers 303 to a page whose address carries the message (``msg``), its kind
(``kind``) and a signature (``sig``): an HMAC of kind and text keyed by the browser's own CSRF
token (app.auth.csrf: a random, HttpOnly cookie that no other site can read). A page shows the
message only when the signature matches the cookie the browser sends, so a link with any other
text in ``?msg=`` (someone else's, or a made-up one) shows nothing.

The address a handler returns (``message_location``) is stored unsigned with the form's one-use
key (app.ui.forms); it is signed for the browser that sent the form each time it is answered.
A form sent again answers with its first message, prefixed: nothing was done the second time.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass
from typing import Literal
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from fastapi import Request

from app.auth.csrf import COOKIE as CSRF_COOKIE
from app.auth.csrf import csrf_token

Kind = Literal["ok", "error"]
KINDS: tuple[Kind, ...] = ("ok", "error")
MSG, KIND, SIG = "msg", "kind", "sig"
REPLAYED = "this form was already sent: "
# A page that carries a message opens at its top, where the message is: a form whose action
# names a fragment (its error box) would otherwise hand that fragment to the redirect.
TOP = "top"


@dataclass(frozen=True)
class Message:
    text: str
    kind: Kind = "ok"


def message_location(path: str, text: str, *, kind: Kind = "ok",
                     query: dict[str, str] | None = None) -> str:
    """``path`` with ``text`` to show there (unsigned: ``signed_location`` signs it)."""
    params = {**(query or {}), MSG: text}
    if kind != "ok":
        params[KIND] = kind
    return f"{path}?{urlencode(params)}"


def _signature(key: str, kind: str, text: str) -> str:
    mac = hmac.new(key.encode(), f"crowdqrels-message\0{kind}\0{text}".encode(), hashlib.sha256)
    return base64.urlsafe_b64encode(mac.digest()[:18]).decode()


def signed_location(request: Request, location: str, *, replayed: bool = False) -> str:
    """``location`` with its message signed for the browser that sent ``request`` (a form
    that passed its CSRF check, so the browser has the cookie); ``replayed``: the form had
    been sent before, and the message says so."""
    parts = urlsplit(location)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
             if k not in (SIG,)]
    values = dict(query)
    if MSG not in values:
        return location
    text, kind = values[MSG], values.get(KIND, "ok")
    if replayed and not text.startswith(REPLAYED):
        text = REPLAYED + text
    query = [(k, text if k == MSG else v) for k, v in query]
    query.append((SIG, _signature(csrf_token(request), kind, text)))
    return urlunsplit(("", "", parts.path, urlencode(query), parts.fragment or TOP))


def page_message(request: Request) -> Message | None:
    """The message in the page's address, if it was signed for this browser; else none."""
    params = request.query_params
    text, kind, sig = params.get(MSG), params.get(KIND, "ok"), params.get(SIG)
    key = request.cookies.get(CSRF_COOKIE)
    if not text or not sig or not key or kind not in KINDS:
        return None
    if not hmac.compare_digest(sig, _signature(key, kind, text)):
        return None
    return Message(text=text, kind=kind)  # type: ignore[arg-type]


def plural(n: int, word: str, words: str | None = None) -> str:
    """``n`` with its noun for a message built in code: "1 task", "2,000 tasks" (``words``: the
    plural when it is not ``word`` + "s"); the pages' templates have ``count`` (_macros.html)."""
    return f"{n:,} {word if n == 1 else (words or word + 's')}"
