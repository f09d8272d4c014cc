"""`python -m lineare.app.i18n extract|update|compile|check|translate FILE` (see app/i18n/catalogs.py)."""
import sys

from lineare.app.i18n.catalogs import main

sys.exit(main())
