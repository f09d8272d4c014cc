import sys

from app.serve import main

sys.exit(main())
