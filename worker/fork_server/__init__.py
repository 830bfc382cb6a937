"""The fork server and warm task processes: how a Python task process comes to be.

``main`` is the fork server's own process, lean so that a fork is cheap; ``client`` is the
supervisor's side of it; ``warm`` keeps a task process for the next try of its slot.
"""
