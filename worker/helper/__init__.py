"""The backend helper process: a non-default XCom or state-object backend run for a try whose task
cannot run it itself (a task of another language).

``main`` is the helper's own process; ``client`` is the supervisor's side, serviced from the same
selector as the task it serves.
"""
