"""The task process's side of the worker: what a forked Python task process runs.

The runner (``runner.py``: the handshake, the context, the call, the result), iterable tasks
(``iterable.py``, their items run by ``item_pool.py`` and checkpointed by ``checkpoints.py``
through ``checkpoint_store.py``), the task side of mapping (``mapping.py``), and the clients
through which a task reaches its supervisor: XComs (``xcoms.py``), Connections and Variables
(``lookups.py``), the state store (``runner.Client`` behind ``tradewind.TaskStateStore``).
``body.py`` picks what a task process runs. How a task process is set up around its fork (its
own process group, death with its parent, signals, stdio) stays beside the fork itself, in
``worker/process.py``.

Nothing here touches the SQL store: every read and write is a request to the supervisor over
the comms socket (DESIGN.md §1), and no module here imports ``state`` or SQLAlchemy, even
through the modules it imports (``tests/test_boundaries.py``). What runs in the Celery pool
process (the supervisor, the fork server, the helper process, the serving of XComs and state
values) stays in ``worker/``.

Nothing is imported here: the backend helper process imports ``lookups`` alone.
"""
