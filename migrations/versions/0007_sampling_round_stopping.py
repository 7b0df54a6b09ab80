"""A sampling round may skip the topics that reached a target recall (thesis chapter 3): the
rule and target it was drawn with, and the topics it skipped.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("sampling_rounds", schema=None) as batch_op:
        batch_op.add_column(sa.Column("stop_rule", sa.String(length=20), nullable=True))
        batch_op.add_column(sa.Column("target_recall", sa.Float(), nullable=True))
        batch_op.add_column(sa.Column("stopped", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("sampling_rounds", schema=None) as batch_op:
        batch_op.drop_column("stopped")
        batch_op.drop_column("target_recall")
        batch_op.drop_column("stop_rule")
