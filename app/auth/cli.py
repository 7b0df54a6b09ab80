"""``crowdqrels keys create|list|revoke``: work on the database directly, no server needed
(migrations are applied first, so the first admin key can be made on a fresh database)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from app.auth.principal import SCOPES, Principal

CLI = Principal(name="cli", scope="admin")


def _session() -> Any:
    from app.core.config import get_settings
    from app.core.db import get_sessionmaker, upgrade_database

    url = get_settings().database_url
    upgrade_database(url)
    return get_sessionmaker(url)()


def _create(args: argparse.Namespace) -> int:
    from app.auth import keys
    from app.auth.service import key_created
    from app.core.errors import DomainError

    with _session() as session:
        try:
            row, key = keys.create_key(session, name=args.name, scope=args.scope,
                                       collections=args.collection or None)
        except DomainError as exc:
            print(f"crowdqrels keys create: error: {exc.detail}", file=sys.stderr)
            return 1
        key_created(session, principal=CLI, row=row)
        names = keys.collection_names(session, [row])
        limited = (", collections " + ", ".join(names.get(i, str(i)) for i in row.collections)
                   if row.collections else "")
        print(f"created key {row.name!r} (scope {row.scope}{limited}, prefix {row.prefix})")
        print("it is shown only now and stored as a hash: keep it somewhere safe")
        print(f"key: {key}")
    return 0


def _list(args: argparse.Namespace) -> int:
    from app.auth import keys

    with _session() as session:
        rows = keys.list_keys(session)
        names = keys.collection_names(session, rows)
    print(f"{'name':<24} {'prefix':<9} {'scope':<7} {'collections':<16} {'last used':<26} "
          "state")
    for row in rows:
        state = f"revoked {row.revoked_at:%Y-%m-%d %H:%M}" if row.revoked_at else "active"
        used = f"{row.last_used_at:%Y-%m-%d %H:%M:%S}" if row.last_used_at else "never"
        collections = (",".join(names.get(i, str(i)) for i in row.collections)
                       if row.collections else "all")
        print(f"{row.name:<24} {row.prefix:<9} {row.scope:<7} {collections:<16} {used:<26} "
              f"{state}")
    return 0


def _revoke(args: argparse.Namespace) -> int:
    from app.auth import audit, keys
    from app.core.errors import DomainError

    with _session() as session:
        try:
            row, changed = keys.revoke_key(session, name=args.name)
        except DomainError as exc:
            print(f"crowdqrels keys revoke: error: {exc.detail}", file=sys.stderr)
            return 1
        if not changed:
            print(f"key {args.name!r} was revoked already ({row.revoked_at:%Y-%m-%d %H:%M} UTC)")
            return 0
        audit.record(session, principal=CLI, action="key_revoked", target_id=row.id,
                     counts={"name": row.name})
    print(f"revoked key {args.name!r} (running API processes drop it from their cache within "
          "CROWDQRELS_KEY_CACHE_S seconds)")
    return 0


def add_commands(subparsers: Any) -> None:
    keys = subparsers.add_parser("keys", help="create, list and revoke API keys")
    sub = keys.add_subparsers(dest="keys_command", required=True)
    create = sub.add_parser("create", help="create a key (printed once, last word of the "
                                           "last line)")
    create.add_argument("--name", required=True)
    create.add_argument("--scope", required=True, choices=SCOPES)
    create.add_argument("--collection", action="append", metavar="C",
                        help="limit the key to this collection (id or name); repeatable")
    create.set_defaults(func=_create)
    listing = sub.add_parser("list", help="list keys (never the keys themselves)")
    listing.set_defaults(func=_list)
    revoke = sub.add_parser("revoke", help="revoke a key by name")
    revoke.add_argument("name")
    revoke.set_defaults(func=_revoke)
