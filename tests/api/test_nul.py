"""RefuseNul (app/api/nul.py) however the server splits the body into chunks: a NUL byte or an
unescaped ``\\u0000`` (JSON) / ``%00`` (form) is refused wherever the splits fall, and text that
only looks like one (an escaped backslash before u0000, a "u0000" or "%2500") goes through whole.
The HTTP contract (422 invalid_text, nothing stored, both databases) is in test_bad_input.py."""

from __future__ import annotations

import asyncio
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from app.api.nul import RefuseNul, has_nul

JSON_BODIES = [  # (body, holds a NUL)
    (b'{"judgments": [{"topic": "t\\u0000", "doc": "d0000", "label": 1}]}', True),
    (b'{"judgments": [{"topic": "t\\\\\\u0000", "doc": "d", "label": 1}]}', True),
    (b'{"judgments": [{"topic": "t", "doc": "d\x00", "label": 1}]}', True),
    (b'{"judgments": [{"topic": "t\\\\u0000", "doc": "d", "label": 1}]}', False),
    (b'{"judgments": [{"topic": "u0000", "doc": "\\u00e9\\\\", "label": 1}]}', False),
    (b'{"judgments": [{"topic": "0000", "doc": "du000", "label": 1}]}', False),
]
FORM_BODIES = [
    (b"method=mv&params=%00", True),
    (b"method=mv&params=%2500&x=00", False),
    (b"method=mv&params=%0", False),
]


def send_through(body: bytes, cuts: list[int], media: bytes) -> tuple[int, bytes | None]:
    """The status RefuseNul answers (200 when it let the request on) and the body the app read."""
    bounds = [0, *sorted(set(c for c in cuts if 0 < c < len(body))), len(body)]
    chunks = [body[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
    messages = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1}
                for i, c in enumerate(chunks)]
    seen: dict[str, object] = {}

    async def app(scope, receive, send) -> None:  # type: ignore[no-untyped-def]
        parts = []
        while True:
            message = await receive()
            parts.append(message["body"])
            if not message["more_body"]:
                break
        seen["body"] = b"".join(parts)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def receive():  # type: ignore[no-untyped-def]
        return messages.pop(0)

    async def send(message) -> None:  # type: ignore[no-untyped-def]
        if message["type"] == "http.response.start":
            seen["status"] = message["status"]

    scope = {"type": "http", "path": "/api/v1/x", "query_string": b"",
             "headers": [(b"content-type", media)]}
    asyncio.run(RefuseNul(app)(scope, receive, send))
    return seen["status"], seen.get("body")  # type: ignore[return-value]


@settings(max_examples=300, deadline=None)
@given(case=st.sampled_from(JSON_BODIES + FORM_BODIES), cuts=st.lists(st.integers(0, 80)))
def test_any_chunking_gives_the_whole_body_answer(case, cuts) -> None:
    body, holds_nul = case
    media = b"application/json" if body.startswith(b"{") else b"application/x-www-form-urlencoded"
    status, seen = send_through(body, cuts, media)
    if holds_nul:
        assert status == 422
    else:
        assert (status, seen) == (200, body)


def test_every_split_into_one_byte_chunks() -> None:
    for body, holds_nul in JSON_BODIES + FORM_BODIES:
        media = (b"application/json" if body.startswith(b"{")
                 else b"application/x-www-form-urlencoded")
        status, _ = send_through(body, list(range(len(body))), media)
        assert status == (422 if holds_nul else 200), body


def test_the_json_cases_mean_what_they_say() -> None:
    """The fixtures' verdicts are the JSON parser's: a NUL in some decoded string, or none."""
    for body, holds_nul in JSON_BODIES:
        decoded = json.loads(body.replace(b"\x00", b"\\u0000"))
        strings = [v for row in decoded["judgments"] for v in row.values() if isinstance(v, str)]
        assert any("\x00" in s for s in strings) == holds_nul, body
        assert has_nul(body, "json") == holds_nul, body


TEXT = st.text(alphabet=st.sampled_from(["\x00", "\\", "u", "0", "a", "é", '"', "%"]), max_size=12)


@settings(max_examples=500, deadline=None)
@given(values=st.lists(TEXT, min_size=1, max_size=6), ascii_only=st.booleans(),
       cuts=st.lists(st.integers(0, 120), max_size=8))
def test_json_verdict_is_the_parsers(values, ascii_only, cuts) -> None:
    """Any JSON a client may send: refused exactly when a decoded string holds a NUL."""
    body = json.dumps({"values": values}, ensure_ascii=ascii_only).encode()
    holds_nul = any("\x00" in v for v in values)
    assert has_nul(body, "json") == holds_nul
    status, seen = send_through(body, cuts, b"application/json")
    assert (status, seen if not holds_nul else None) == ((422, None) if holds_nul
                                                         else (200, body))
