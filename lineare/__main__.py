import sys

from lineare.cli import main

sys.exit(main())
