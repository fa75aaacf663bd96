"""Uploads that cannot fill a replica's memory.

Streamlit keeps every file a session uploads, under any file id the client makes up, until the session is removed:
through the proxy, 1,000 uploads of 0.99 MB took a replica from 350 to 1,332 MiB. The app takes one upload, a state
file (`server.maxUploadSize` in .streamlit/config.toml caps its size), and drops it once read (`forget_upload`). Here
the server keeps at most `UPLOADS_PER_SESSION` files per session (its newest) and `UPLOAD_BYTES` in all (the oldest
files go first: a state file is read, and dropped, within a moment of its upload, so only files nobody reads are ever
pushed out).

Measured (bench/README.md, "Upload flood"): 1,000 uploads of 0.99 MB straight to a replica, +985 MiB before, +12 MiB
with the cap; 300 uploads of 4 MB from 31 sessions, +1,167 MiB before, +90 MiB with it.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from attnviz.app.streamlit_patches.version import require_streamlit

UPLOADS_PER_SESSION = 1  # the share box's state file; a newer upload replaces it
UPLOAD_BYTES = 64 * 1024 * 1024  # every session's uploads together, in one server


def _drop_upload(manager: Any, session_id: str, file_id: str) -> None:
    """Remove one file from the manager's storage and totals (the caller holds its lock)."""
    storage = manager.file_storage.get(session_id)
    record = storage.pop(file_id, None) if storage is not None else None
    if record is not None:
        manager._total_bytes -= len(record.data)
        manager._file_count -= 1
    if storage is not None and not storage:
        del manager.file_storage[session_id]


def cap_uploads(per_session: int = UPLOADS_PER_SESSION, total_bytes: int = UPLOAD_BYTES) -> None:
    """Make Streamlit's upload manager keep at most `per_session` files per session (the newest) and `total_bytes`
    of files in all (the oldest files go first; the file just uploaded always stays)."""
    require_streamlit("cap_uploads")
    from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager

    if getattr(MemoryUploadedFileManager.add_file, "capped", False):
        return

    def add_file(self: MemoryUploadedFileManager, session_id: str, file: Any) -> None:
        key = (session_id, file.file_id)
        with self._lock:
            # (session id, file id) of every file kept, oldest first; entries of files Streamlit removed since (a
            # session ended, a file was deleted) are skipped and pruned
            arrivals: OrderedDict[tuple[str, str], None] = self.__dict__.setdefault("_attnviz_arrivals", OrderedDict())
            _drop_upload(self, *key)  # the same id again: replaced, and now the newest
            self.file_storage[session_id][file.file_id] = file
            self._total_bytes += len(file.data)
            self._file_count += 1
            arrivals.pop(key, None)
            arrivals[key] = None
            storage = self.file_storage[session_id]
            while len(storage) > per_session:
                _drop_upload(self, session_id, next(iter(storage)))
            while self._total_bytes > total_bytes:
                oldest = next(iter(arrivals))
                if oldest == key:
                    break
                del arrivals[oldest]
                _drop_upload(self, *oldest)
            if len(arrivals) > 2 * self._file_count + 64:
                kept = [k for k in arrivals if k[1] in self.file_storage.get(k[0], {})]
                self.__dict__["_attnviz_arrivals"] = OrderedDict.fromkeys(kept)

    add_file.capped = True  # type: ignore[attr-defined]
    MemoryUploadedFileManager.add_file = add_file  # type: ignore[method-assign]


def forget_upload(upload: Any) -> None:
    """Drop a file the page has read (an `st.file_uploader` value) from the server's memory; the uploader then
    returns None until the next upload."""
    from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    # As Streamlit's own st.chat_input does with the files it has read; never raises on the page
    ctx = get_script_run_ctx()
    if ctx is not None and isinstance(ctx.uploaded_file_mgr, MemoryUploadedFileManager):
        ctx.uploaded_file_mgr.remove_file(ctx.session_id, upload.file_id)
