"""How an evaluation draws the qrels: "labels" (each task's label independently from its stored
posterior, the only draws before this revision) or "parameters" (the annotators' parameters from
their posterior first, then the labels given them: issue #34 item 3.1).

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("evaluations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("draws", sa.String(16), nullable=False,
                                      server_default="labels"))


def downgrade() -> None:
    with op.batch_alter_table("evaluations", schema=None) as batch_op:
        batch_op.drop_column("draws")
