"""`python -m harness.cli`: the `contam` console script."""

import sys

from harness.cli import main

sys.exit(main())
