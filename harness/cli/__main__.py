"""`python -m contam.harness.cli`: the `contam` console script."""

import sys

from contam.harness.cli import main

sys.exit(main())
