"""Tasks and documents without foreign-key constraints, as judgments have been since 0001.

A judgment file creates one task and, usually, one document per new (topic, document) pair, and
PostgreSQL checked four foreign keys for each (a FOR KEY SHARE row lock and a lookup each): 2.2 s
of PostgreSQL's CPU in a 1,000,000-line upload of 200,000 new tasks, a fifth of the request
(docs/benchmarks.md, "Ingest without the per-task foreign keys"). The ingest statements take
every id they store from their own joins, under the collection's lock, and nothing deletes
collections, topics or documents, so the checks and their cascades never had work to do.

Downgrade puts the constraints back (every stored row satisfies them).

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-06
"""

from __future__ import annotations

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

# table -> (column, referenced table): the constraints dropped
DROPPED = {
    "tasks": (("collection_id", "collections"), ("topic_id", "topics"),
              ("document_id", "documents")),
    "documents": (("collection_id", "collections"),),
}


def upgrade() -> None:
    for table, keys in DROPPED.items():
        with op.batch_alter_table(table, schema=None) as batch_op:
            for column, referred in keys:
                batch_op.drop_constraint(op.f(f"fk_{table}_{column}_{referred}"),
                                         type_="foreignkey")


def downgrade() -> None:
    for table, keys in reversed(DROPPED.items()):
        with op.batch_alter_table(table, schema=None) as batch_op:
            for column, referred in keys:
                batch_op.create_foreign_key(op.f(f"fk_{table}_{column}_{referred}"), referred,
                                            [column], ["id"], ondelete="CASCADE")
