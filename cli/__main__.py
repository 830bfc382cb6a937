"""``python -m cli``: the same as the ``tradewind`` command."""

from __future__ import annotations

from cli.main import main

main()
