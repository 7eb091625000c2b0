"""``python -m hermes_chatto [--version] {doctor,setup,settings}`` (see :mod:`hermes_chatto.cli`)."""

from hermes_chatto.cli import main

raise SystemExit(main())
