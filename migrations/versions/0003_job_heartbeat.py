"""A heartbeat on every job row: a running job writes it; a stale one is marked failed.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

JOB_TABLES = ("aggregations", "feature_builds")


def upgrade() -> None:
    for table in JOB_TABLES:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(sa.Column("heartbeat_at", sa.DateTime(timezone=True),
                                          nullable=True))


def downgrade() -> None:
    for table in JOB_TABLES:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_column("heartbeat_at")
