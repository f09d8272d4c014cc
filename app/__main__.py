import sys

from lineare.app.serve import main

sys.exit(main())
