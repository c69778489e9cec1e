"""The controller's state file: what it holds beyond its configuration file (every live
change: `aqmctl set`, `loop`, `l2`, a loop's step, an experiment's scheduled change) and
its change log, saved before a change is acknowledged, so a restarted controller runs
what it ran before (docs/controller/index.md, "A controller restart").

The file is JSON, written whole to a temporary file beside it, flushed to disk and
renamed over it (rename is atomic): a crash leaves the old state or the new one, never a
mix. It carries a SHA-256 of its content, so a file cut short or altered is refused (one
line naming it) rather than half applied. Beside it, `NAME.lock` is held (flock) by the
one controller that writes it, and says which one that is (its PID and socket).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path

FORMAT = "p4aqm controller state 1"


class StateError(ValueError):
    """A state file that cannot be read, applied or written; str() is one line naming it."""


@dataclass(frozen=True)
class Holder:
    """The controller that holds a state file's lock."""

    pid: int | None
    socket: str | None
    host: str | None

    def __str__(self) -> str:
        where = f" on {self.host}" if self.host and self.host != socket.gethostname() else ""
        serves = f", serving {self.socket}" if self.socket else ""
        return f"pid {self.pid}{where}{serves}" if self.pid else "another controller"


def canonical(doc: dict) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


def state_path(config: Path, state_dir: Path | None = None) -> Path:
    """Where the state of the controller serving `config` lives: beside it
    (aqm.toml -> aqm.state.json), or in state_dir."""
    return (state_dir if state_dir is not None else config.parent) / f"{config.stem}.state.json"


class StateFile:
    def __init__(self, path: Path):
        self.path = path
        self.lock_path = path.with_name(path.name + ".lock")
        self._lock_fd: int | None = None

    def __str__(self) -> str:
        return str(self.path)

    # ----- reading ---------------------------------------------------------------------

    def read(self) -> dict | None:
        """The saved state, checked whole (None: no file yet); StateError if the file is
        cut short, altered or of another format."""
        try:
            text = self.path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as err:
            raise StateError(f"state file {self.path}: {err.strerror}") from None
        try:
            doc = json.loads(text)
        except ValueError as err:
            raise StateError(f"state file {self.path} is not complete JSON ({err}): cut "
                             "short or damaged") from None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise StateError(f"state file {self.path} is not a p4aqm controller state "
                             f"(format {FORMAT!r})")
        state = doc.get("state")
        if not isinstance(state, dict) or doc.get("sha256") != hashlib.sha256(
                canonical(state)).hexdigest():
            raise StateError(f"state file {self.path} does not match its checksum: altered "
                             "or damaged")
        return state

    # ----- writing ---------------------------------------------------------------------

    def write(self, state: dict) -> None:
        """The whole state, atomically: a temporary file beside it, flushed to disk,
        renamed over it, and the rename flushed (the folder's fsync)."""
        data = canonical({"format": FORMAT, "sha256": hashlib.sha256(canonical(state))
                          .hexdigest(), "state": state})
        folder = self.path.parent
        try:
            fd, temporary = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=folder)
            try:
                with os.fdopen(fd, "wb") as out:
                    out.write(data)
                    out.flush()
                    os.fsync(out.fileno())
                os.replace(temporary, self.path)
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
            directory = os.open(folder, os.O_RDONLY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)
        except OSError as err:
            raise StateError(f"cannot write the state file {self.path}: "
                             f"{err.strerror or err}") from None

    # ----- the lock: one writer ------------------------------------------------------------

    @property
    def locked(self) -> bool:
        """This process holds the lock."""
        return self._lock_fd is not None

    def lock(self, served_on: Path | None) -> Holder | None:
        """Take the lock (None), or who holds it. The kernel frees it when its holder's
        process ends, however it ends."""
        if self._lock_fd is not None:
            return None
        try:
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as err:
            raise StateError(f"cannot open the state file's lock {self.lock_path}: "
                             f"{err.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = self._holder(fd)
            os.close(fd)
            return holder
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                  "socket": str(served_on) if served_on else None}).encode(), 0)
        self._lock_fd = fd
        return None

    def holder(self) -> Holder | None:
        """Who holds the lock now (None: nobody, or this process)."""
        if self._lock_fd is not None:
            return None
        try:
            fd = os.open(self.lock_path, os.O_RDONLY)
        except OSError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return self._holder(fd)
        finally:
            os.close(fd)
        return None

    @staticmethod
    def _holder(fd: int) -> Holder:
        try:
            info = json.loads(os.pread(fd, 4096, 0) or b"{}")
        except ValueError:
            info = {}
        return Holder(info.get("pid"), info.get("socket"), info.get("host"))

    def unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None
