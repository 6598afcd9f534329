"""``python -m tolk``: the `tolk` command."""

import sys

from tolk.cli import main

sys.exit(main())
