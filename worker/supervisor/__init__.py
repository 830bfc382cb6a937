"""The supervisor: what runs in the Celery worker's process for each message, one thread a slot.

``execute`` takes a message from claim to record (both the store's, ``state.engine``); ``loop``
services the task process (requests, output, heartbeats, the timeout); ``requests`` and the
modules beside it answer the task's requests, registered from their annotated request class.
"""
