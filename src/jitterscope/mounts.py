"""Mounts shared by concurrent jitterscope processes (today: tracefs).

tracefs is usually not mounted on a fresh machine.  The first jitterscope
process that needs it mounts it (journalled); others that start meanwhile use
that mount; the last live user unmounts it.  Who uses it is kept in a
lock-protected registry, `/run/jitterscope/mounts-<mount namespace>.json`:
{target: {"fstype", "users": [{pid, start}]}} (a mount does not outlive a boot,
and neither does /run; a mount belongs to one mount namespace).  A target in
the registry is one a jitterscope process mounted; a mount found there that the
registry does not name belongs to someone else and is never unmounted.  A user
is alive while a process with its pid *and* start time exists, so users killed
with -9 count as gone; `sweep` (run by `restore`) unmounts what they left.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TypedDict

from jitterscope.journal import Entry, Journal, Outcome, process_start_time


def _is_mounted(target: str, fstype: str | None = None, pid: int | str = "self") -> bool:
    try:
        lines = Path(f"/proc/{pid}/mounts").read_text().splitlines()
    except OSError:
        return False
    for ln in lines:
        f = ln.split()
        if len(f) > 2 and f[1] == target and (fstype is None or f[2] == fstype):
            return True
    return False


def undo_umount(e: Entry) -> Outcome:
    """Journals written before mounts were shared: unmount if still mounted."""
    if not _is_mounted(e["path"]):
        return Outcome("unchanged", f"{e['path']} already unmounted")
    _umount(e["path"])
    return Outcome("restored", f"unmounted {e['path']}")


MOUNT_REGISTRY = Path("/run/jitterscope")


def _mnt_ns(pid: int | str = "self") -> str:
    try:
        return os.readlink(f"/proc/{pid}/ns/mnt").strip("mnt:[]")
    except OSError:
        return ""


class MountUser(TypedDict):
    pid: int
    start: int | None  # process_start_time: a recycled pid is not a user


class MountRecord(TypedDict):
    fstype: str
    users: list[MountUser]


@contextlib.contextmanager
def _mount_registry(ns: str) -> Iterator[dict[str, MountRecord]]:
    """The registry of jitterscope's mounts in one mount namespace, locked while in use:
    {target: {"fstype", "users": [{pid, start}]}}.  Saved on leaving the block."""
    MOUNT_REGISTRY.mkdir(mode=0o755, parents=True, exist_ok=True)
    path = _registry_path(ns)
    with open(MOUNT_REGISTRY / "mounts.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            # written only here, as MountRecords; one not readable as JSON counts as empty
            reg: dict[str, MountRecord] = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            reg = {}
        yield reg
        _save_registry(path, reg)


def _registry_path(ns: str) -> Path:
    return MOUNT_REGISTRY / f"mounts-{ns}.json"


def _save_registry(path: Path, reg: dict[str, MountRecord]) -> None:
    """Write the registry (its lock held)."""
    if reg:
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(reg) + "\n")
        os.replace(tmp, path)
    else:
        path.unlink(missing_ok=True)


def _umount(target: str, ns_pid: int | None = None) -> None:
    cmd = ["umount", target]
    if ns_pid is not None:  # a mount in another namespace: unmount it there
        cmd = ["nsenter", f"--mount=/proc/{ns_pid}/ns/mnt", "--", *cmd]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=30)
    if proc.returncode != 0:
        raise RuntimeError((proc.stderr.strip().splitlines() or [f"umount exit {proc.returncode}"])[-1])


# Two jitterscope processes killed together (the ranks of one cluster job) are restored by two watchdogs at
# once: the last user's unmount found the other's trace instance still there ("target is busy") and left the
# mount and its journal for a later command.  The other's instance goes within moments: wait that long.
BUSY_WAIT_S = 5.0


def _umount_when_free(target: str, ns_pid: int | None) -> None:
    deadline = time.monotonic() + BUSY_WAIT_S
    while True:
        try:
            _umount(target, ns_pid)
            return
        except RuntimeError as err:
            if "busy" not in str(err) or time.monotonic() > deadline:
                raise
        time.sleep(0.1)


def _process_in_ns(ns: str) -> int | None:
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and _mnt_ns(d.name) == ns:
            return int(d.name)
    return None


def _release_mount(reg: dict[str, MountRecord], target: str, ns: str, user: MountUser | None) -> Outcome:
    """Drop `user` (and dead users) from a mount; unmount it when no live user is left."""
    rec = reg.get(target)
    if rec is None:
        return Outcome("unchanged", f"{target}: not mounted by jitterscope, left as found")
    users = list(rec.get("users", []))
    if user is not None:
        for i, u in enumerate(users):
            if u.get("pid") == user.get("pid") and u.get("start") == user.get("start"):
                del users[i]
                break
    rec["users"] = [u for u in users if _alive(u)]
    if rec["users"]:
        pids = ", ".join(str(u["pid"]) for u in rec["users"])
        return Outcome("unchanged", f"{target} left mounted: jitterscope process(es) {pids} still use it")
    ns_pid = None
    if ns != _mnt_ns():
        ns_pid = _process_in_ns(ns)
        if ns_pid is None:  # the namespace, and its mount, ended with its last process
            del reg[target]
            return Outcome("unchanged", f"{target} (mount namespace {ns}) already gone with its namespace")
    mounted = _is_mounted(target, rec.get("fstype"), ns_pid or "self")
    if mounted:
        _umount_when_free(target, ns_pid)  # raises if still busy: the record stays for the next restore
    del reg[target]
    if not mounted:
        return Outcome("unchanged", f"{target} already unmounted")
    return Outcome(
        "restored",
        f"unmounted {rec.get('fstype')} from {target} (jitterscope mounted it; "
        f"no jitterscope process uses it any more)",
    )


def undo_mount(e: Entry) -> Outcome:
    """Journal undo of `mount`: this user leaves; the last one unmounts."""
    ns = str(e.get("ns") or _mnt_ns())
    user: MountUser | None = {"pid": e["pid"], "start": e.get("start")} if "pid" in e else None
    with _mount_registry(ns) as reg:
        return _release_mount(reg, e["target"], ns, user)


def sweep() -> list[Outcome]:
    """Mounts jitterscope made whose users all died without a journal saying so."""
    out: list[Outcome] = []
    try:
        files = sorted(MOUNT_REGISTRY.glob("mounts-*.json"))
    except OSError:
        return out
    for f in files:
        ns = f.stem.removeprefix("mounts-")
        try:
            with _mount_registry(ns) as reg:
                for target in list(reg):
                    if any(_alive(u) for u in reg[target].get("users", [])):
                        continue
                    try:
                        out.append(_release_mount(reg, target, ns, None))
                    except Exception as err:  # noqa: BLE001 - one line per item, keep going
                        out.append(Outcome("failed", f"{target}: could not unmount: {err}"))
        except OSError as err:
            out.append(Outcome("failed", f"{f}: {err.strerror}"))
    return out


def _alive(user: MountUser) -> bool:
    return process_start_time(int(user["pid"])) == user.get("start")


def use(journal: Journal, target: str, fstype: str, source: str) -> bool:
    """Make sure `fstype` is mounted at `target`, sharing a mount another jitterscope process made
    (this process is registered as one of its users, and the mount journalled in `journal` when
    this process makes it); True if it is mounted afterwards.  A mount that was there before any
    jitterscope process is used as is and never unmounted."""
    ns, me = _mnt_ns(), os.getpid()
    start = process_start_time(me)
    with _mount_registry(ns) as reg:
        if _is_mounted(target, fstype) and target not in reg:
            return True  # someone else's mount
        journal.begin("mount", target=target, fstype=fstype, ns=ns, pid=me, start=start)
        rec = reg.setdefault(target, {"fstype": fstype, "users": []})
        rec["users"] = [u for u in rec["users"] if _alive(u)] + [{"pid": me, "start": start}]
        if _is_mounted(target, fstype):
            return True
        # the registry names the mount before it is made: killed between the two, the journal's undo would
        # otherwise find a mount the registry does not name, take it for someone else's and leave it mounted
        _save_registry(_registry_path(ns), reg)
        proc = subprocess.run(["mount", "-t", fstype, source, target], capture_output=True, check=False)
        if proc.returncode != 0 and len(rec["users"]) == 1:
            del reg[target]
        return proc.returncode == 0
