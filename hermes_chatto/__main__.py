"""``python -m hermes_chatto doctor [--json]`` (see :mod:`hermes_chatto.cli`)."""

from hermes_chatto.cli import main

raise SystemExit(main())
