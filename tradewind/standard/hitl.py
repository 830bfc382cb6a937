"""The human-in-the-loop operators (``HITLOperator``, ``ApprovalOperator``,
``HITLBranchOperator``, ``HITLEntryOperator``): refused at load in one line.

Each waits for a person's answer as a deferred task, on the triggerer, which Tradewind does not
have yet; a DAG file using one fails its import naming it, never a task at run time.
"""

from __future__ import annotations

from typing import Any

from tradewind.exceptions import DagDefinitionError


class HITLOperator:
    """Refused: a human-in-the-loop task waits on the triggerer."""

    def __init__(self, **kwargs: Any) -> None:
        name = f"{type(self).__name__} {kwargs.get('task_id', '')}".strip()
        raise DagDefinitionError(
            f"{name}: human-in-the-loop tasks wait on the triggerer, not in Tradewind yet"
        )


class ApprovalOperator(HITLOperator):
    """Refused, as ``HITLOperator``."""


class HITLBranchOperator(HITLOperator):
    """Refused, as ``HITLOperator``."""


class HITLEntryOperator(HITLOperator):
    """Refused, as ``HITLOperator``."""
