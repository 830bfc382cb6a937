"""fsspec options from a Connection: what the object-storage XCom and state backends and
``ObjectStoragePath`` all read from one.

For ``s3://``, the login and password are the access key and secret, and the extra may hold
``endpoint_url`` and ``region_name``; any extra's ``storage_options`` are passed to fsspec as
given, for every protocol.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tradewind.connections import Connection

S3_PROTOCOLS = ("s3", "s3a")


def storage_options(protocol: str, connection: Connection) -> dict[str, Any]:
    """The fsspec options of ``connection`` for a filesystem of ``protocol``."""
    extra = dict(connection.extra or {})
    options: dict[str, Any] = dict(extra.pop("storage_options", {}) or {})
    if protocol in S3_PROTOCOLS:
        if connection.login:
            options["key"] = connection.login
        if connection.password:
            options["secret"] = connection.password
        if extra.get("endpoint_url"):
            options["endpoint_url"] = extra["endpoint_url"]
        if extra.get("region_name"):
            options.setdefault("client_kwargs", {})["region_name"] = extra["region_name"]
    return options
