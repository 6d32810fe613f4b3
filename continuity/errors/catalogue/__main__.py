"""``python3 -m continuity.errors.catalogue > docs/errors.md``: the catalogue's page."""

from continuity.errors.catalogue import main

main()
