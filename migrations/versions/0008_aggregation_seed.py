"""An aggregation keeps the seed it was asked for: the method's random_state when it has one,
and the held-out folds' (a method without random_state, DS, lost it before).

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("aggregations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("seed", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("aggregations", schema=None) as batch_op:
        batch_op.drop_column("seed")
