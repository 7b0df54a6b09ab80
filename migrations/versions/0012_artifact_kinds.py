"""A fit may store several artifacts, one per kind: the key of aggregation_artifacts becomes
(aggregation_id, kind). A GP fit keeps its predictor (``gp-npz-v1``, for predict) and now also
the joint posterior of its judged tasks (``gp-joint-v1``, for evaluation draws).

Downgrade: the older key holds one artifact per fit, so every artifact but the predictor is
deleted (evaluations then draw tasks independently, as before).

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

PREDICTOR = "gp-npz-v1"


def upgrade() -> None:
    with op.batch_alter_table("aggregation_artifacts", schema=None) as batch_op:
        batch_op.drop_constraint("pk_aggregation_artifacts", type_="primary")
        batch_op.create_primary_key("pk_aggregation_artifacts", ["aggregation_id", "kind"])


def downgrade() -> None:
    op.execute(sa.text("DELETE FROM aggregation_artifacts WHERE kind <> :kind")
               .bindparams(kind=PREDICTOR))
    with op.batch_alter_table("aggregation_artifacts", schema=None) as batch_op:
        batch_op.drop_constraint("pk_aggregation_artifacts", type_="primary")
        batch_op.create_primary_key("pk_aggregation_artifacts", ["aggregation_id"])
