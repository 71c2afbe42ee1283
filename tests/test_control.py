"""The control endpoint: a Unix socket only its user can open from the moment
it exists, TCP only with a token, and a bad address refused before anything
binds."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess

import pytest
import trio
from daemon_swarm import PERIOD, SCHEMA
from test_daemon_processes import SCHEMA_TOML, cli

import vinifera
from vinifera.daemon.control import ControlError, ControlToken, request
from vinifera.errors import ViniferaError


async def test_the_unix_socket_is_private_even_under_a_permissive_umask(tmp_path, monkeypatch):
    chmods = []
    monkeypatch.setattr(os, "chmod", lambda *a, **k: chmods.append(a))
    path = tmp_path / "n.sock"
    old = os.umask(0)
    try:
        async with vinifera.Node(SCHEMA, period=PERIOD, seed=1, control=str(path)):
            assert stat.S_IMODE(path.stat().st_mode) == 0o600
            assert stat.S_ISSOCK(path.stat().st_mode)
            assert os.umask(0) == 0  # the node put the process umask back
            result = await trio.to_thread.run_sync(request, str(path), {"op": "status"})
            assert result["address"]
    finally:
        os.umask(old)
    assert chmods == []  # created private, never made private afterwards
    assert not path.exists()


async def test_tcp_control_needs_the_token(tmp_path):
    secret = tmp_path / "token"
    secret.write_bytes(b"a control token of some length\n")
    token = ControlToken.load(secret)
    async with vinifera.Node(
        SCHEMA, period=PERIOD, seed=1, control="127.0.0.1:0", control_token=token
    ) as node:
        addr = node.runner.control_address
        assert addr.startswith("127.0.0.1:") and not addr.endswith(":0")

        def ask(tok):
            return request(addr, {"op": "publish", "values": {"a0": 1, "a1": 2}}, token=tok)

        with pytest.raises(ControlError, match="needs its control token"):
            await trio.to_thread.run_sync(ask, None)
        with pytest.raises(ControlError, match="bad or missing token"):
            await trio.to_thread.run_sync(ask, ControlToken(b"another token, also long enough"))
        assert node.status()["counters"].get("delivered", 0) == 0
        assert isinstance((await trio.to_thread.run_sync(ask, token))["eid"], int)


class Wire:
    """A raw client of the control endpoint: what an eavesdropper or a port
    squatter holds (the lines a real client sent)."""

    def __init__(self, addr: str) -> None:
        host, port = addr.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.file = self.sock.makefile("rb")

    def line(self) -> dict:
        return json.loads(self.file.readline())

    def send(self, raw: bytes) -> dict:
        self.sock.sendall(raw)
        return self.line()

    def close(self) -> None:
        self.file.close()
        self.sock.close()


async def test_a_captured_proof_is_refused(tmp_path):
    """Issue 75 item 4: the proof was a fixed hash of the token, so one seen
    request let anyone publish. Now it is a MAC over a per-connection nonce,
    the request's position and the request itself."""
    from vinifera.daemon.control import REPLY, REQUEST

    token = ControlToken(b"a control token of some length")
    async with vinifera.Node(
        SCHEMA, period=PERIOD, seed=1, control="127.0.0.1:0", control_token=token
    ) as node:
        addr = node.runner.control_address

        def attack() -> list[dict]:
            honest = Wire(addr)
            challenge = honest.line()["challenge"]
            publish = {"op": "publish", "values": {"a0": 1, "a1": 2}}
            proof = token.prove(REQUEST, challenge, 0, publish)
            captured = json.dumps({**publish, "proof": proof}).encode() + b"\n"
            replies = [honest.send(captured)]  # the honest request, admitted
            # the same line again on the same connection (position 1, not 0)
            replies.append(honest.send(captured))
            honest.close()
            # the same line on a new connection (another nonce)
            replay = Wire(addr)
            second = replay.line()["challenge"]
            replies.append(replay.send(captured))
            replay.close()
            # the proof moved onto another request on the connection it was made for
            forged = Wire(addr)
            third = forged.line()["challenge"]
            good = token.prove(REQUEST, third, 0, publish)
            other = {"op": "subscribe", "expr": "a0 in [0, 1]", "proof": good}
            replies.append(forged.send(json.dumps(other).encode() + b"\n"))
            forged.close()
            assert len({challenge, second, third}) == 3  # fresh per connection
            # the node proves its replies: the admitted one verifies
            ok = dict(replies[0])
            assert token.verify(REPLY, challenge, 0, ok)
            return replies

        replies = await trio.to_thread.run_sync(attack)
        assert replies[0]["ok"] and isinstance(replies[0]["result"]["eid"], int)
        for refused in replies[1:]:
            assert refused == {"ok": False, "error": "bad or missing token"}
        assert node.status()["subscription"] is None  # the forged subscribe did nothing


def test_a_squatter_that_cannot_prove_the_token_is_not_believed(tmp_path):
    """Something else on the node's port answers "ok": the client says so
    instead of taking the answer for the node's."""
    import threading

    token = ControlToken(b"a control token of some length")
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def squat() -> None:
        conn, _ = server.accept()
        with conn:
            conn.sendall(b'{"challenge": "00"}\n')
            conn.recv(1 << 16)
            conn.sendall(b'{"ok": true, "result": {"eid": 1}}\n')

    thread = threading.Thread(target=squat, daemon=True)
    thread.start()
    try:
        with pytest.raises(ControlError, match="without proving it holds the token"):
            request(f"127.0.0.1:{port}", {"op": "status"}, token=token)
    finally:
        thread.join(timeout=10)
        server.close()


def test_tcp_control_without_a_token_or_off_loopback_is_refused_in_settings():
    with pytest.raises(ViniferaError, match="token"):
        vinifera.Node(SCHEMA, control="127.0.0.1:9")
    with pytest.raises(ViniferaError, match="loopback"):
        vinifera.Node(SCHEMA, control="0.0.0.0:1", control_token=ControlToken(b"x" * 16))
    with pytest.raises(ViniferaError, match="no directory"):
        vinifera.Node(SCHEMA, control="/nonexistent/dir/n.sock")


@pytest.mark.parametrize(
    "control,message",
    [
        ("0.0.0.0:1", "loopback"),
        ("10.1.2.3:7", "loopback"),
        ("127.0.0.1:7", "token"),
        ("n.sock:x", "socket path or HOST:PORT"),
        ("/nonexistent/n.sock", "no directory"),
    ],
)
def test_a_bad_control_address_is_a_usage_error_before_anything_binds(tmp_path, control, message):
    schema = tmp_path / "s.toml"
    schema.write_text(SCHEMA_TOML)
    args = [*cli(), "run", "--schema", str(schema), "--listen", "127.0.0.1:0"]
    out = subprocess.run([*args, "--control", control], capture_output=True, text=True, timeout=30)
    assert out.returncode == 2, out.stderr
    assert message in out.stderr and "Traceback" not in out.stderr
    assert "started" not in out.stderr  # refused before binding and joining


def test_the_cli_client_sends_the_token(tmp_path):
    schema = tmp_path / "s.toml"
    schema.write_text(SCHEMA_TOML)
    token = tmp_path / "token"
    token.write_bytes(b"the control secret, 16+ bytes")
    short = tmp_path / "short"
    short.write_bytes(b"short")
    proc = subprocess.Popen(
        [*cli(), "run", "--schema", str(schema), "--listen", "127.0.0.1:0", "--period", "0.5",
         "--control", "127.0.0.1:0", "--control-token-file", str(token)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        # the bound port is in the "started" diagnostic line
        line = ""
        while '"started"' not in line:
            line = proc.stderr.readline()
            assert line, "the node exited"
        control = json.loads(line)["control_address"]
        base = [*cli(), "status", "--control", control]
        out = subprocess.run(base, capture_output=True, text=True, timeout=30)
        assert out.returncode == 1 and "needs its control token" in out.stderr
        out = subprocess.run([*base, "--control-token-file", str(short)], capture_output=True,
                             text=True, timeout=30)  # fmt: skip
        assert out.returncode == 2 and "too short" in out.stderr
        out = subprocess.run([*base, "--control-token-file", str(token)], capture_output=True,
                             text=True, timeout=30)  # fmt: skip
        assert out.returncode == 0 and '"address"' in out.stdout
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def test_a_second_node_on_a_live_control_path_is_refused_and_the_first_stays_reachable(tmp_path):
    schema = tmp_path / "s.toml"
    schema.write_text(SCHEMA_TOML)
    sock = tmp_path / "n.sock"
    args = [*cli(), "run", "--schema", str(schema), "--listen", "127.0.0.1:0", "--period", "0.5",
            "--control", str(sock)]  # fmt: skip
    first = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        while '"started"' not in (line := first.stderr.readline()):
            assert line, "the first node exited"
        second = subprocess.run(args, capture_output=True, text=True, timeout=30)
        assert second.returncode == 2, second.stderr
        err = second.stderr.strip().splitlines()
        assert err[-1] == (
            f"Error: control socket {sock} is in use by a running node: give this one another "
            "--control path"
        )
        assert "Traceback" not in second.stderr
        # before: the second node took the path over and deleted it on exit
        assert request(str(sock), {"op": "status"})["address"]
    finally:
        first.terminate()
        first.wait(timeout=15)
    assert not sock.exists()  # the first node removed its own socket


async def test_a_stale_socket_is_replaced_and_only_our_own_socket_is_removed(tmp_path):
    import socket as stdsocket

    path = tmp_path / "n.sock"
    stale = stdsocket.socket(stdsocket.AF_UNIX)
    stale.bind(str(path))
    stale.close()  # a socket file nobody listens on: an earlier run's
    async with vinifera.Node(SCHEMA, period=PERIOD, seed=1, control=str(path)):
        assert (await trio.to_thread.run_sync(request, str(path), {"op": "status"}))["address"]
        path.unlink()  # someone else puts their own socket at the path meanwhile
        other = stdsocket.socket(stdsocket.AF_UNIX)
        other.bind(str(path))
    try:
        assert path.exists()  # leaving, the node did not remove a socket it did not make
    finally:
        other.close()


def test_a_bare_file_name_is_a_socket_path_in_the_working_folder(tmp_path):
    # before: "n1.sock" (no slash) was refused as a bad HOST:PORT
    schema = tmp_path / "s.toml"
    schema.write_text(SCHEMA_TOML)
    args = [*cli(), "run", "--schema", str(schema), "--listen", "127.0.0.1:0", "--period", "0.5",
            "--control", "n1.sock"]  # fmt: skip
    node = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        while '"started"' not in (line := node.stderr.readline()):
            assert line, "the node exited"
        assert stat.S_ISSOCK((tmp_path / "n1.sock").stat().st_mode)
        out = subprocess.run([*cli(), "status", "--control", "n1.sock"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=30)  # fmt: skip
        assert out.returncode == 0 and '"address"' in out.stdout, out.stderr
    finally:
        node.terminate()
        node.wait(timeout=15)
    assert not (tmp_path / "n1.sock").exists()
