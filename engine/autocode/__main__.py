import sys

from autocode.cli import main

sys.exit(main())
