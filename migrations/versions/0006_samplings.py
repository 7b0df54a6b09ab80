"""Samplings of documents from runs: samplings, their rounds and the sampled pairs.

Revision ID: 0006
Revises: 0003
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

BIG = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "samplings",
        sa.Column("id", BIG, nullable=False),
        sa.Column("collection_id", sa.Integer(), nullable=False),
        sa.Column("strategy", sa.String(length=20), nullable=False),
        sa.Column("method", sa.String(length=20), nullable=False),
        sa.Column("runs", sa.JSON(), nullable=False),
        sa.Column("depth", sa.Integer(), nullable=True),
        sa.Column("budget_per_round", sa.Integer(), nullable=False),
        sa.Column("seed", sa.Integer(), nullable=False),
        sa.Column("pool_size", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(),
                  nullable=False),
        sa.ForeignKeyConstraint(["collection_id"], ["collections.id"],
                                name=op.f("fk_samplings_collection_id_collections"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_samplings")),
    )
    op.create_index("ix_samplings_collection_id", "samplings", ["collection_id"])
    op.create_table(
        "sampling_rounds",
        sa.Column("id", BIG, nullable=False),
        sa.Column("sampling_id", BIG, nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("requested", sa.Integer(), nullable=False),
        sa.Column("drawn", sa.Integer(), nullable=False),
        sa.Column("short", sa.Boolean(), nullable=False),
        sa.Column("forced", sa.Boolean(), nullable=False),
        sa.Column("design", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(),
                  nullable=False),
        sa.ForeignKeyConstraint(["sampling_id"], ["samplings.id"],
                                name=op.f("fk_sampling_rounds_sampling_id_samplings"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sampling_rounds")),
    )
    op.create_index("ix_sampling_rounds_sampling_id", "sampling_rounds", ["sampling_id"])
    op.create_table(
        "sampled_pairs",
        sa.Column("id", BIG, nullable=False),
        sa.Column("sampling_id", BIG, nullable=False),
        sa.Column("round_id", BIG, nullable=False),
        sa.Column("topic", sa.String(length=200), nullable=False),
        sa.Column("doc", sa.String(length=500), nullable=False),
        sa.Column("source_run", sa.String(length=200), nullable=True),
        sa.Column("selection", sa.Float(), nullable=False),
        sa.Column("inclusion", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["sampling_id"], ["samplings.id"],
                                name=op.f("fk_sampled_pairs_sampling_id_samplings"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["round_id"], ["sampling_rounds.id"],
                                name=op.f("fk_sampled_pairs_round_id_sampling_rounds"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sampled_pairs")),
    )
    op.create_index("ix_sampled_pairs_sampling_id", "sampled_pairs", ["sampling_id"])


def downgrade() -> None:
    op.drop_index("ix_sampled_pairs_sampling_id", table_name="sampled_pairs")
    op.drop_table("sampled_pairs")
    op.drop_index("ix_sampling_rounds_sampling_id", table_name="sampling_rounds")
    op.drop_table("sampling_rounds")
    op.drop_index("ix_samplings_collection_id", table_name="samplings")
    op.drop_table("samplings")
