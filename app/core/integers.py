"""The ranges of the whole numbers the database stores, for request models to bound: a larger
value is then a 422 naming the field instead of the database's error (PostgreSQL refuses it;
SQLite refuses what does not fit in 64 bits).

- ``MAX_INT``: BIGINT, row ids and offsets;
- ``Int32``: INTEGER (32-bit on PostgreSQL), a collection's scale values (judgments' labels, gold,
  ``relevant_from``), evaluation and sampling seeds, budgets;
- ``MAX_SEED``: a fit's or a draw's ``random_state`` (numpy takes 0 … 2**32 − 1).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

MAX_INT = 2**63 - 1
MIN_INT32 = -(2**31)
MAX_INT32 = 2**31 - 1
MAX_SEED = 2**32 - 1  # what numpy's generators accept as a seed

Int32 = Annotated[int, Field(ge=MIN_INT32, le=MAX_INT32)]
RowId = Annotated[int, Field(ge=1, le=MAX_INT)]
