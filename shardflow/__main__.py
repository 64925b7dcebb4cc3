"""``python -m shardflow ...`` is the ``shardflow`` command."""

import sys

from .cli.main import main

sys.exit(main())
