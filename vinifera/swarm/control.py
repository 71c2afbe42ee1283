"""Looking at and stopping a running swarm from outside its runner, through
what the runner keeps in the manifest: its own PID, and per slot the node's
address, PID and control socket."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

from vinifera.daemon.control import ControlError, request
from vinifera.swarm.runner import read_manifest, write_json_atomically


def _is_ours(pid: object, word: str) -> bool:
    """A live process whose command line names `word` (a PID from an old
    manifest may belong to something else by now)."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return word.encode() in cmdline


def runner_alive(manifest: dict) -> bool:
    return manifest.get("state") != "ended" and _is_ours(manifest.get("runner_pid"), "swarm")


def swarm_status(manifest: dict, timeout: float = 3.0) -> list[dict]:
    """Per slot: slot, address, pid, up (as the manifest says), and the
    node's own status (None if it does not answer, with the error)."""
    out = []
    for slot, entry in sorted(manifest.get("slots", {}).items(), key=lambda kv: int(kv[0])):
        st, error = None, None
        if entry.get("up"):
            try:
                st = request(entry["control"], {"op": "status"}, timeout=timeout)
            except ControlError as err:
                error = str(err)
        out.append({"slot": int(slot), "address": entry.get("address"), "pid": entry.get("pid"),
                    "up": bool(entry.get("up")), "status": st, "error": error})  # fmt: skip
    return out


def stop_swarm(
    log_dir: Path, manifest: dict, timeout: float, say: Callable[[str], None] = lambda m: None
) -> str:
    """Ask the runner to stop (SIGTERM: as Ctrl-C) and wait for it; without
    a runner, SIGTERM the nodes the manifest lists as up (each logs its
    leave) and mark the manifest ended. Returns what was done."""
    deadline = time.monotonic() + timeout
    if runner_alive(manifest):
        pid = manifest["runner_pid"]
        say(f"stopping the swarm's runner (pid {pid}) ...")
        os.kill(pid, signal.SIGTERM)
        while _is_ours(pid, "swarm"):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the runner (pid {pid}) has not stopped in {timeout:g} s")
            time.sleep(0.2)
        return f"stopped the swarm in {log_dir}; results in {log_dir / 'results.json'}"
    nodes = [
        (slot, e["pid"])
        for slot, e in manifest.get("slots", {}).items()
        if e.get("up") and _is_ours(e.get("pid"), "vinifera")
    ]
    if not nodes and manifest.get("state") == "ended":
        return f"the swarm in {log_dir} is not running (ended {manifest.get('ended')})"
    for _, pid in nodes:
        os.kill(pid, signal.SIGTERM)
    say(f"no runner: stopped {len(nodes)} nodes directly")
    while any(_is_ours(pid, "vinifera") for _, pid in nodes):
        if time.monotonic() > deadline:
            raise TimeoutError(f"nodes still running after {timeout:g} s")
        time.sleep(0.2)
    manifest = read_manifest(log_dir)
    for slot, _ in nodes:
        manifest["slots"][slot]["up"] = False
    manifest["state"] = "ended"
    write_json_atomically(log_dir / "manifest.json", manifest)
    return f"stopped {len(nodes)} nodes of the swarm in {log_dir} (its runner was gone)"
