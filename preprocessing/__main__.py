import sys

from preprocessing.cli import main

sys.exit(main())
