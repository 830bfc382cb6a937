"""DAG files' bytecode, compiled once per content and kept under ``TRADEWIND_HOME/cache``.

A DAG file is compiled from its source on every load, and a folder's files are loaded again on
every pass of the scheduler and by every ``dags`` command. Python's own ``__pycache__`` trusts a
``.pyc`` on the source's mtime (whole seconds) and size, so an edit within the same second could
load the old DAG; the cache here keys each file's code on a hash of its bytes instead (PEP 552's
checked hashes: ``importlib.util.source_hash``), so an edit is always seen, and it writes nothing
into the DAGs folder (which may be read-only or synced from git).

A cache file is the interpreter's magic number, the source's hash and the marshalled code. One
that cannot be read, is for another interpreter or another content is compiled again and
replaced (atomically: readers never see half a file); one that cannot be written is not kept.
"""

from __future__ import annotations

import hashlib
import importlib.util
import marshal
import os
import tempfile
from pathlib import Path
from types import CodeType

_HEADER = len(importlib.util.MAGIC_NUMBER) + 8

#: In this process, by file: the last content's hash and its code (the scheduler's next pass).
_LOADED: dict[str, tuple[bytes, CodeType]] = {}


def compiled(path: Path, source: bytes, cache_dir: Path | None) -> CodeType:
    """The code of ``source`` (the file at ``path``), from the cache when its content matches."""
    header = importlib.util.MAGIC_NUMBER + importlib.util.source_hash(source)
    name = str(path)
    seen = _LOADED.get(name)
    if seen is not None and seen[0] == header:
        return seen[1]
    cache_file = _cache_file(cache_dir, name) if cache_dir is not None else None
    code = _read(cache_file, header) if cache_file is not None else None
    if code is None:
        code = compile(source, name, "exec", dont_inherit=True)
        if cache_file is not None:
            _write(cache_file, header, code)
    _LOADED[name] = (header, code)
    return code


def _cache_file(cache_dir: Path, name: str) -> Path:
    stem = Path(name).stem[:40]
    return cache_dir / f"{stem}-{hashlib.sha1(name.encode()).hexdigest()[:16]}.pyc"


def _read(cache_file: Path, header: bytes) -> CodeType | None:
    try:
        data = cache_file.read_bytes()
    except OSError:
        return None
    if data[:_HEADER] != header:
        return None
    try:
        code = marshal.loads(data[_HEADER:])
    except (EOFError, ValueError, TypeError):
        return None
    return code if isinstance(code, CodeType) else None


def _write(cache_file: Path, header: bytes, code: CodeType) -> None:
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=cache_file.parent, suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(header + marshal.dumps(code))
            os.replace(temporary, cache_file)
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError:
        pass  # a read-only home: compiled each time, as before
