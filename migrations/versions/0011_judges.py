"""Judges: an annotator's kind (crowd, llm, expert), and withdrawals in the judgment log.

A judge file sent again replaces the judge's judgments without overwriting any row: the new
lines are appended, and every pair the judge had that the new file does not label gets a
withdrawal, a judgment row whose label is NULL. Readers keep, per (task, annotator), only the
judgments after its latest withdrawal (``app.judgments.columns``).

Downgrade: the older schema has no withdrawals, so they are applied for good (each withdrawal and
every earlier judgment of its task and annotator are deleted: what fits saw stays what they see)
before the label is made NOT NULL again; the kind column goes.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("annotators", schema=None) as batch_op:
        batch_op.add_column(sa.Column("kind", sa.String(length=10), nullable=False,
                                      server_default="crowd"))
    with op.batch_alter_table("judgments", schema=None) as batch_op:
        batch_op.alter_column("label", existing_type=sa.Integer(), nullable=True)


def downgrade() -> None:
    op.execute(
        "DELETE FROM judgments WHERE label IS NULL OR EXISTS (SELECT 1 FROM judgments AS w "
        "WHERE w.label IS NULL AND w.task_id = judgments.task_id "
        "AND w.annotator_id = judgments.annotator_id AND w.id > judgments.id)")
    with op.batch_alter_table("judgments", schema=None) as batch_op:
        batch_op.alter_column("label", existing_type=sa.Integer(), nullable=False)
    with op.batch_alter_table("annotators", schema=None) as batch_op:
        batch_op.drop_column("kind")
