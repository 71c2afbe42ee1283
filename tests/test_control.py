"""The control endpoint: a Unix socket only its user can open from the moment
it exists, TCP only with a token, and a bad address refused before anything
binds."""

from __future__ import annotations

import json
import os
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

        for wrong in (None, ControlToken(b"another token, also long enough")):
            with pytest.raises(ControlError, match="bad or missing token"):
                await trio.to_thread.run_sync(ask, wrong)
        assert node.status()["counters"].get("delivered", 0) == 0
        assert isinstance((await trio.to_thread.run_sync(ask, token))["eid"], int)


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
        assert out.returncode == 1 and "bad or missing token" in out.stderr
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
