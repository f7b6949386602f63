"""Files contam keeps beside a store (the discovery file, the reply journal, a run's log) made so
that nobody else can aim them at a file of ours.

A store may sit in a folder other users can write (a shared project folder, ``/tmp``). There,
another user could plant a symlink at the name contam is about to write, and contam, following
it, would overwrite a file of the user's own. So each file is created under a fresh name with
``O_CREAT | O_EXCL | O_NOFOLLOW`` (which never follows a link and never opens a file already
there), mode 0600, and renamed into place: a rename replaces the planted link itself, never
what it points at. An existing file is reopened only with ``O_NOFOLLOW`` and only when it is
this user's own regular 0600 file (see ARCHITECTURE.md, "The store").
"""

from __future__ import annotations

import os
import pwd
import secrets
import stat
from pathlib import Path
from typing import BinaryIO

from contam.harness.errors import UserError

__all__ = ["write_private", "create_private", "open_own", "owner_name", "not_own_reason",
           "stat_reason"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def write_private(path: Path, data: bytes) -> None:
    """``path`` holds ``data``, written all at once (a reader never sees half a file)."""
    with create_private(path) as out:
        out.write(data)


class create_private:  # noqa: N801 - used as a context manager, like open()
    """``with create_private(path) as out:`` a new 0600 file written under a name of its own
    and renamed over ``path`` when the block ends without an exception (removed otherwise)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.partial, self.file = _fresh(self.path)

    def __enter__(self) -> BinaryIO:
        return self.file

    def __exit__(self, kind: object, *rest: object) -> None:
        self.file.close()
        if kind is not None:
            self.partial.unlink(missing_ok=True)
            return
        try:
            os.replace(self.partial, self.path)
        except OSError as exc:  # a planted file we may not replace (a sticky folder)
            self.partial.unlink(missing_ok=True)
            raise UserError(f"{self.path}: cannot write it ({exc.strerror}); "
                            f"{not_own_reason(self.path) or 'remove it'}") from None


def open_own(path: Path) -> BinaryIO:
    """``path`` open for appending, unbuffered (a write that fails leaves nothing waiting to be
    written again at close): this user's own regular file if there is one (made 0600),
    a new empty 0600 one otherwise (:class:`create_private`). Anything else there (a symlink,
    someone else's file, a folder) is refused in one line."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return _created_in_place(path)
    except OSError as exc:
        raise UserError(f"{path}: cannot write it "
                        f"({not_own_reason(path) or exc.strerror})") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
        os.close(fd)
        raise UserError(f"{path}: cannot write it ({not_own_reason(path)})")
    os.fchmod(fd, 0o600)
    return os.fdopen(fd, "ab", buffering=0)


def not_own_reason(path: Path) -> str | None:
    """Why ``path`` is not this user's own regular 0600 file, in words; None when it is (or
    there is nothing there)."""
    try:
        return stat_reason(os.lstat(path))
    except FileNotFoundError:
        return None


def stat_reason(info: os.stat_result) -> str | None:
    """:func:`not_own_reason` for what ``lstat`` or ``fstat`` found."""
    owner = owner_name(info.st_uid)
    if stat.S_ISLNK(info.st_mode):
        return f"it is a symbolic link, owned by {owner}"
    if stat.S_ISDIR(info.st_mode):
        return "it is a folder"
    if not stat.S_ISREG(info.st_mode):
        return "it is not a regular file"
    if info.st_uid != os.getuid():
        return f"it is owned by {owner}, not by you"
    if info.st_mode & 0o077:
        return f"it is owned by {owner} with mode {stat.S_IMODE(info.st_mode):o}, not 600"
    return None


def owner_name(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def _created_in_place(path: Path) -> BinaryIO:
    partial, file = _fresh(path)
    try:
        os.replace(partial, path)
    except OSError as exc:
        file.close()
        partial.unlink(missing_ok=True)
        raise UserError(f"{path}: cannot write it ({exc.strerror})") from None
    return file


def _fresh(path: Path) -> tuple[Path, BinaryIO]:
    """A new file beside ``path`` under a random name nobody could have planted in advance."""
    while True:
        partial = path.with_name(f".{path.name}.{secrets.token_hex(6)}.partial")
        try:
            return partial, os.fdopen(os.open(partial, _CREATE, 0o600), "wb", buffering=0)
        except FileExistsError:
            continue
        except OSError as exc:
            raise UserError(f"{path}: cannot write it ({exc.strerror})") from None
