"""An aggregation may start from an earlier fit's parameters (a warm start): the fit it started
from.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

BIG = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    with op.batch_alter_table("aggregations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("warm_start_id", BIG, nullable=True))
        batch_op.create_foreign_key(
            op.f("fk_aggregations_warm_start_id_aggregations"), "aggregations",
            ["warm_start_id"], ["id"], ondelete="SET NULL")


def downgrade() -> None:
    with op.batch_alter_table("aggregations", schema=None) as batch_op:
        batch_op.drop_constraint(op.f("fk_aggregations_warm_start_id_aggregations"),
                                 type_="foreignkey")
        batch_op.drop_column("warm_start_id")
