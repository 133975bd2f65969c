"""`python -m benchmarks`: runs benchmarks/run.py's main.

A package's __main__ is the one main module that spawned processes do not import again, so
build_dataset's workers start as fast here as under `python -m preprocessing`.
"""

import sys

from benchmarks.run import main

sys.exit(main())
