"""The task state store's backends, as the worker serves them.

``TRADEWIND_STATE_STORE_BACKEND`` is ``sql`` (the default: every value in its row) or
``object_storage`` (values over ``TRADEWIND_STATE_STORE_MAX_VALUE_BYTES`` in object storage, the
row keeping a reference). ``serving.py`` is the supervisor's side, ``object_storage.py`` the
backend (it runs in the helper process, or in the process of ``tradewind tasks clear``),
``purge.py`` what a clear needs. The interface is the XCom backends' (``worker.xcom``), and so is
the stub for tests: ``worker.xcom.StubXComBackend``.

Nothing is imported here: the supervisor imports ``serving`` without loading fsspec, and the
helper imports ``object_storage`` without loading SQLAlchemy.
"""
