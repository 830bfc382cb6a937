"""``python -m tradewind.cli``: the same as the ``tradewind`` command."""

from __future__ import annotations

from tradewind.cli.main import main

main()
