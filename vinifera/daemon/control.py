"""The local control endpoint of a running node, and its client.

ADDR is a Unix socket path (anything containing '/'), created mode 0600 (under
a restrictive umask, so there is no moment at which another user could
connect); or HOST:PORT on a loopback address, which any local user can reach,
so it is served only with a token (`ControlToken`, a file like the network
key) that every request must prove it holds. Never a routable address.
Protocol: one JSON object per line each way.

    {"op": "publish", "values": {"temp": 3.5}}  -> {"ok": true, "result": {"eid": ...}}
    {"op": "publish", "assignments": ["temp=3.5", "city=Oslo"]}  (parsed as on the CLI)
    {"op": "subscribe", "expr": "temp in [0, 5]"}  (null unsubscribes)
    {"op": "status"}

With a token the node first sends {"challenge": HEX}, a fresh nonce per
connection, and the n-th request (from 0) carries "proof": a MAC keyed by the
token over the nonce, n and the request itself (`ControlToken.prove`); each
reply carries the node's proof the same way, so the client knows it is not
talking to whatever else took the port. A proof seen on the wire is worth
nothing on another connection, at another position or for another request.
Errors come back as {"ok": false, "error": "..."}; the node keeps running.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import ipaddress
import json
import os
import secrets
import socket
import stat
from pathlib import Path

import trio

from vinifera.errors import ViniferaError
from vinifera.expr import parse_event
from vinifera.wire import read_secret, secret_bytes

MAX_REQUEST = 1 << 16
# sun_path is 108 bytes on Linux, 104 on the BSDs.
MAX_UNIX_PATH = 104


class ControlError(ViniferaError):
    """The control endpoint could not be reached or refused the request."""


def is_unix(addr: str) -> bool:
    """A socket path: anything with a slash, or a bare file name such as
    n1.sock (no colon: HOST:PORT always has one)."""
    return "/" in addr or ":" not in addr


def parse_tcp(addr: str) -> tuple[str, int]:
    host, sep, port = addr.rpartition(":")
    host = host.strip("[]")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ControlError(f"bad control address {addr!r}: a socket path or HOST:PORT")
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if not loopback:
        raise ControlError(
            f"control address {addr!r} must be a socket path or on a loopback address "
            "(the endpoint drives the node: it is never offered to the network)"
        )
    return host, int(port)


def check_control(addr: str, token: ControlToken | None) -> None:
    """Everything that can be known about a control address before binding
    it (ControlError): so a bad one is a usage error, not a failure after
    the node has joined."""
    if is_unix(addr):
        path = Path(addr)
        if len(os.fsencode(addr)) > MAX_UNIX_PATH:
            raise ControlError(f"control socket path too long ({len(addr)} > {MAX_UNIX_PATH})")
        if not path.parent.is_dir():
            raise ControlError(f"control socket {addr}: no directory {path.parent}")
        if (path.exists() or path.is_symlink()) and not stat.S_ISSOCK(path.lstat().st_mode):
            raise ControlError(f"{addr} exists and is not a socket; refusing to replace it")
        return
    parse_tcp(addr)
    if token is None:
        raise ControlError(
            f"a TCP control endpoint ({addr}) is open to every local user: give it a token "
            "file (--control-token-file), or use a socket path"
        )


class ControlToken:
    """A shared secret for the control endpoint, read from a file (16 bytes
    or more, surrounding whitespace ignored). It never crosses the wire:
    each message carries a MAC of itself keyed by the token (`prove`)."""

    __slots__ = ("_key",)

    def __init__(self, secret: bytes) -> None:
        secret = secret_bytes(secret, "control token")
        self._key = hashlib.blake2b(secret, digest_size=32, person=b"vinifera-ctl").digest()

    @classmethod
    def load(cls, path: str | Path) -> ControlToken:
        return cls(read_secret(path, "control token"))

    def prove(self, role: bytes, challenge: str, seq: int, message: dict) -> str:
        """The proof of the `seq`-th `message` (without its "proof") on the
        connection whose nonce is `challenge`; `role` is REQUEST or REPLY, so
        a node's reply cannot be sent back to it as a request."""
        body = json.dumps(message, sort_keys=True, separators=(",", ":"))
        h = hashlib.blake2b(key=self._key, digest_size=32, person=role)
        h.update(challenge.encode() + b"\n" + str(seq).encode() + b"\n" + body.encode())
        return h.hexdigest()

    def verify(self, role: bytes, challenge: str, seq: int, message: dict) -> bool:
        """Whether `message` carries the right proof (it is removed)."""
        given = message.pop("proof", None)
        if not isinstance(given, str):
            return False
        return hmac.compare_digest(given, self.prove(role, challenge, seq, message))

    def __repr__(self) -> str:
        return "ControlToken(<secret>)"


REQUEST = b"vinifera-ctl-rq"
REPLY = b"vinifera-ctl-rp"


# ----------------------------------------------------------------- server


async def _handle(runner, request: dict) -> dict:
    op = request.get("op")
    if op == "publish":
        values = request.get("values")
        assignments = request.get("assignments")
        if isinstance(assignments, list) and all(isinstance(a, str) for a in assignments):
            values = parse_event(assignments, runner.settings.schema)
        elif not isinstance(values, dict):
            raise ControlError(
                "publish needs 'values' (an object attribute -> value) "
                "or 'assignments' (a list of 'attr=value' strings)"
            )
        return {"eid": await runner.publish(values)}
    if op == "subscribe":
        expr = request.get("expr")
        if expr is not None and not isinstance(expr, str):
            raise ControlError("subscribe needs 'expr': an expression string or null")
        sub = await runner.subscribe(expr)
        return {"subscription": None if sub is None else str(sub)}
    if op == "status":
        return runner.status()
    raise ControlError(f"unknown op {op!r} (publish, subscribe, status)")


async def _serve_stream(runner, token: ControlToken | None, stream: trio.abc.Stream) -> None:
    with contextlib.suppress(trio.BrokenResourceError):  # the client went away
        await _converse(runner, token, stream)


async def _converse(runner, token: ControlToken | None, stream: trio.abc.Stream) -> None:
    buf = b""
    challenge = ""
    seq = 0
    async with stream:
        if token is not None:
            challenge = secrets.token_hex(16)
            await stream.send_all(json.dumps({"challenge": challenge}).encode() + b"\n")
        while True:
            chunk = await stream.receive_some(MAX_REQUEST)
            if not chunk:
                return
            buf += chunk
            if len(buf) > MAX_REQUEST and b"\n" not in buf:
                await stream.send_all(b'{"ok":false,"error":"request too long"}\n')
                return
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                try:
                    request = json.loads(line)
                    if not isinstance(request, dict):
                        raise ControlError("a request is a JSON object")
                    if token is not None and not token.verify(REQUEST, challenge, seq, request):
                        # nothing more on this connection: no guessing in a loop
                        await stream.send_all(b'{"ok":false,"error":"bad or missing token"}\n')
                        return
                    reply = {"ok": True, "result": await _handle(runner, request)}
                except (ValueError, RuntimeError) as err:  # bad JSON, ViniferaError, not running
                    reply = {"ok": False, "error": str(err)}
                if token is not None:
                    reply["proof"] = token.prove(REPLY, challenge, seq, reply)
                seq += 1
                await stream.send_all(json.dumps(reply).encode() + b"\n")


def _answers(path: Path) -> bool:
    """Whether something listens on the Unix socket at `path` (a stale
    socket file of a run that ended refuses the connection)."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(str(path))
    except OSError:
        return False
    finally:
        probe.close()
    return True


def _bind_unix(path: Path) -> socket.socket:
    """A listening Unix socket that only our user can connect to from the
    moment it exists: created under umask 0177 (mode 0600), not chmod-ed
    after bind, which would leave a window under a permissive umask. A
    socket a live node answers on is never taken over."""
    if path.exists() or path.is_symlink():
        if not stat.S_ISSOCK(path.lstat().st_mode):
            raise ControlError(f"{path} exists and is not a socket; refusing to replace it")
        if _answers(path):
            raise ControlError(
                f"control socket {path} is in use by a running node: give this one another "
                "--control path"
            )
        path.unlink()  # a stale socket of an earlier run
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(str(path))
    except OSError:
        sock.close()
        raise
    finally:
        os.umask(old)
    sock.listen(16)
    return sock


async def serve_control(
    runner, addr: str, token: ControlToken | None = None, *, task_status=trio.TASK_STATUS_IGNORED
) -> None:
    """Serve until cancelled; `task_status.started(address)` once listening."""
    check_control(addr, token)
    made: tuple[int, int] | None = None  # (device, inode) of the socket file we made
    if is_unix(addr):
        path = Path(addr)
        sock = trio.socket.from_stdlib_socket(_bind_unix(path))
        st = path.lstat()
        made = (st.st_dev, st.st_ino)
        listeners = [trio.SocketListener(sock)]
        bound = str(path)
    else:
        host, port = parse_tcp(addr)
        listeners = await trio.open_tcp_listeners(port, host=host)
        bound = f"{host}:{listeners[0].socket.getsockname()[1]}"

    async def serve(stream: trio.abc.Stream) -> None:
        await _serve_stream(runner, token, stream)

    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(trio.serve_listeners, serve, listeners)
            task_status.started(bound)
    finally:
        if made is not None:
            _remove_if_ours(Path(addr), made)


def _remove_if_ours(path: Path, made: tuple[int, int]) -> None:
    """Remove the socket file we bound, not one another process put at the
    same path since (removing that would cut its node off)."""
    try:
        st = path.lstat()
    except OSError:
        return
    if (st.st_dev, st.st_ino) == made:
        path.unlink(missing_ok=True)


# ----------------------------------------------------------------- client


def request(
    addr: str, payload: dict, timeout: float = 10.0, token: ControlToken | None = None
) -> dict:
    """Send one request to a running node (blocking); returns its result or
    raises ControlError with the node's message."""
    try:
        if is_unix(addr):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            target = addr
        else:
            host, port = parse_tcp(addr)
            sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
            target = (host, port)
        with sock:
            sock.settimeout(timeout)
            sock.connect(target)
            lines = _Lines(sock)
            challenge = ""
            if token is not None:
                greeting = _parse(lines.next(), addr)
                challenge = greeting.get("challenge")
                if not isinstance(challenge, str):
                    raise ControlError(f"{addr} asked for no token: is it a node's TCP endpoint?")
                payload = {**payload, "proof": token.prove(REQUEST, challenge, 0, payload)}
            sock.sendall(json.dumps(payload).encode() + b"\n")
            reply = _parse(lines.next(), addr)
    except OSError as err:
        raise ControlError(f"cannot reach the node at {addr}: {err.strerror or err}") from None
    if token is None and "challenge" in reply:
        raise ControlError(f"the node at {addr} needs its control token (--control-token-file)")
    if token is not None and reply.get("ok") and not token.verify(REPLY, challenge, 0, reply):
        raise ControlError(
            f"the endpoint at {addr} answered without proving it holds the token: "
            "is another program on that port?"
        )
    if not reply.get("ok"):
        raise ControlError(reply.get("error", "request failed"))
    return reply["result"]


class _Lines:
    """Newline-terminated lines from a blocking socket."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._buf = b""

    def next(self) -> bytes:
        while b"\n" not in self._buf:
            chunk = self._sock.recv(1 << 16)
            if not chunk:
                break
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line


def _parse(line: bytes, addr: str) -> dict:
    try:
        message = json.loads(line)
    except ValueError:
        raise ControlError(f"no valid reply from {addr}") from None
    if not isinstance(message, dict):
        raise ControlError(f"no valid reply from {addr}")
    return message
