"""``python -m shardflow.cli.train ...`` runs ``shardflow train ...``."""

import sys

from .command import main

sys.exit(main())
