"""``python -m app.cli``: the ``crowdqrels`` command."""

import sys

from app.cli import main

sys.exit(main())
