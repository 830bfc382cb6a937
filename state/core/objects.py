"""How a state-store row refers to an object instead of holding the value: its key, its text.

With ``TRADEWIND_STATE_STORE_BACKEND=object_storage`` a large value lives in object storage and
its row holds ``{"__tradewind_state_object__": "<url>", "bytes": <size>}`` (written by the
supervisor, ``worker/state_store/``). The SQL side needs to recognise such rows without parsing
them (deletes report them, housekeeping keeps them); the helper process that writes the objects
must not pay for importing SQLAlchemy. So the names live here, in a module that imports nothing.
"""

from __future__ import annotations

#: The key of a state row that refers to an object.
STATE_OBJECT_KEY = "__tradewind_state_object__"
#: What the JSON text of such a row starts with (the supervisor writes the key first, compact).
REFERENCE_PREFIX = '{"' + STATE_OBJECT_KEY + '":'
