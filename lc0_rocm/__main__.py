import sys

from lc0_rocm.cli import main

sys.exit(main())
