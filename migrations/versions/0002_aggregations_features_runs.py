"""Aggregations with their results and artifacts; task features and feature builds; runs.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def _descending_index(table: str, column: str, tiebreak: str) -> None:
    """(aggregation_id, column DESC NULLS LAST, tiebreak): the dashboards' default sort, so a page
    is read from the index instead of sorting every row of the aggregation. SQLite orders NULLs
    first, hence last when descending; it has no NULLS LAST in an index."""
    nulls = " NULLS LAST" if op.get_bind().dialect.name == "postgresql" else ""
    op.execute(
        f"CREATE INDEX ix_{table}_aggregation_id_{column} "
        f"ON {table} (aggregation_id, {column} DESC{nulls}, {tiebreak})"
    )


def upgrade() -> None:
    op.create_table(
        "aggregations",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("collection_id", sa.Integer(), nullable=False),
        sa.Column("method", sa.String(length=20), nullable=False),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("graded", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("progress", sa.Float(), nullable=False),
        sa.Column("progress_message", sa.String(length=500), nullable=True),
        sa.Column(
            "watermark", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("n_judgments", sa.Integer(), nullable=True),
        sa.Column("job_id", sa.String(length=200), nullable=True),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("timings", sa.JSON(), nullable=True),
        sa.Column("objective_history", sa.JSON(), nullable=True),
        sa.Column("evaluation", sa.JSON(), nullable=True),
        sa.Column("info", sa.JSON(), nullable=True),
        sa.Column("classes", sa.JSON(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["collection_id"],
            ["collections.id"],
            name=op.f("fk_aggregations_collection_id_collections"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_aggregations")),
    )
    with op.batch_alter_table("aggregations", schema=None) as batch_op:
        batch_op.create_index("ix_aggregations_collection_id", ["collection_id"], unique=False)

    op.create_table(
        "feature_builds",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("collection_id", sa.Integer(), nullable=False),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("progress", sa.Float(), nullable=False),
        sa.Column("progress_message", sa.String(length=500), nullable=True),
        sa.Column("job_id", sa.String(length=200), nullable=True),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("timings", sa.JSON(), nullable=True),
        sa.Column("report", sa.JSON(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["collection_id"],
            ["collections.id"],
            name=op.f("fk_feature_builds_collection_id_collections"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_feature_builds")),
    )
    with op.batch_alter_table("feature_builds", schema=None) as batch_op:
        batch_op.create_index("ix_feature_builds_collection_id", ["collection_id"], unique=False)

    op.create_table(
        "feature_sets",
        sa.Column("collection_id", sa.Integer(), nullable=False),
        sa.Column("names", sa.JSON(), nullable=False),
        sa.Column("groups", sa.JSON(), nullable=False),
        sa.Column("source", sa.String(length=20), nullable=False),
        sa.Column(
            "updated_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["collection_id"],
            ["collections.id"],
            name=op.f("fk_feature_sets_collection_id_collections"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("collection_id", name=op.f("pk_feature_sets")),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("collection_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("n_lines", sa.Integer(), nullable=False),
        sa.Column("n_topics", sa.Integer(), nullable=False),
        sa.Column("max_depth", sa.Integer(), nullable=False),
        sa.Column("payload", sa.LargeBinary(), nullable=False),
        sa.Column(
            "uploaded_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["collection_id"],
            ["collections.id"],
            name=op.f("fk_runs_collection_id_collections"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_runs")),
        sa.UniqueConstraint("collection_id", "name", name=op.f("uq_runs_collection_id_name")),
    )
    op.create_table(
        "aggregation_annotators",
        sa.Column(
            "aggregation_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column(
            "annotator_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("competence", sa.Float(), nullable=True),
        sa.Column("noise_variance", sa.Float(), nullable=True),
        sa.Column("bias", sa.Float(), nullable=True),
        sa.Column("n_judgments", sa.Integer(), nullable=False),
        sa.Column("n_gold", sa.Integer(), nullable=False),
        sa.Column("gold_accuracy", sa.Float(), nullable=True),
        sa.Column("extra", sa.JSON(), nullable=True),
        sa.ForeignKeyConstraint(
            ["aggregation_id"],
            ["aggregations.id"],
            name=op.f("fk_aggregation_annotators_aggregation_id_aggregations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["annotator_id"],
            ["annotators.id"],
            name=op.f("fk_aggregation_annotators_annotator_id_annotators"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "aggregation_id", "annotator_id", name=op.f("pk_aggregation_annotators")
        ),
    )
    with op.batch_alter_table("aggregation_annotators", schema=None) as batch_op:
        batch_op.create_index(
            "ix_aggregation_annotators_annotator_id", ["annotator_id"], unique=False
        )
    _descending_index("aggregation_annotators", "competence", "annotator_id")

    op.create_table(
        "aggregation_artifacts",
        sa.Column(
            "aggregation_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("kind", sa.String(length=50), nullable=False),
        sa.Column("payload", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["aggregation_id"],
            ["aggregations.id"],
            name=op.f("fk_aggregation_artifacts_aggregation_id_aggregations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("aggregation_id", name=op.f("pk_aggregation_artifacts")),
    )
    op.create_table(
        "aggregation_tasks",
        sa.Column(
            "aggregation_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("task_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("label", sa.Integer(), nullable=False),
        sa.Column("p_relevant", sa.Float(), nullable=False),
        sa.Column("proba", sa.JSON(), nullable=False),
        sa.Column("uncertainty", sa.Float(), nullable=False),
        sa.Column("posterior_mean", sa.Float(), nullable=True),
        sa.Column("posterior_variance", sa.Float(), nullable=True),
        sa.Column("difficulty", sa.Float(), nullable=True),
        sa.Column("bias", sa.Float(), nullable=True),
        sa.Column("extra", sa.JSON(), nullable=True),
        sa.ForeignKeyConstraint(
            ["aggregation_id"],
            ["aggregations.id"],
            name=op.f("fk_aggregation_tasks_aggregation_id_aggregations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["task_id"],
            ["tasks.id"],
            name=op.f("fk_aggregation_tasks_task_id_tasks"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("aggregation_id", "task_id", name=op.f("pk_aggregation_tasks")),
    )
    _descending_index("aggregation_tasks", "difficulty", "task_id")
    _descending_index("aggregation_tasks", "uncertainty", "task_id")

    op.create_table(
        "task_features",
        sa.Column("task_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("collection_id", sa.Integer(), nullable=False),
        sa.Column("vector", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["collection_id"],
            ["collections.id"],
            name=op.f("fk_task_features_collection_id_collections"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["task_id"],
            ["tasks.id"],
            name=op.f("fk_task_features_task_id_tasks"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("task_id", name=op.f("pk_task_features")),
    )
    with op.batch_alter_table("task_features", schema=None) as batch_op:
        batch_op.create_index("ix_task_features_collection_id", ["collection_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("task_features", schema=None) as batch_op:
        batch_op.drop_index("ix_task_features_collection_id")

    op.drop_table("task_features")
    op.drop_index("ix_aggregation_tasks_aggregation_id_uncertainty", "aggregation_tasks")
    op.drop_index("ix_aggregation_tasks_aggregation_id_difficulty", "aggregation_tasks")

    op.drop_table("aggregation_tasks")
    op.drop_table("aggregation_artifacts")
    with op.batch_alter_table("aggregation_annotators", schema=None) as batch_op:
        batch_op.drop_index("ix_aggregation_annotators_annotator_id")
    op.drop_index("ix_aggregation_annotators_aggregation_id_competence", "aggregation_annotators")

    op.drop_table("aggregation_annotators")
    op.drop_table("runs")
    op.drop_table("feature_sets")
    with op.batch_alter_table("feature_builds", schema=None) as batch_op:
        batch_op.drop_index("ix_feature_builds_collection_id")

    op.drop_table("feature_builds")
    with op.batch_alter_table("aggregations", schema=None) as batch_op:
        batch_op.drop_index("ix_aggregations_collection_id")

    op.drop_table("aggregations")
