import sys

from hardneg.cli import main

sys.exit(main())
