"""`vinifera-node`: what a peer runs."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from vinifera import __version__
from vinifera.cli.params import FiniteRange
from vinifera.protocol.config import PROFILES, SYSTEMS


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="vinifera-node")
def main() -> None:
    """A Vinifera peer: join an overlay, subscribe, publish, forward.

    Every node of a swarm shares one attribute schema (a TOML file with one
    [attributes.NAME] table per attribute) and subscribes with an expression
    such as:  temp in [-10, 0] and city == "Stockholm"
    """


@main.command("check")
@click.option(
    "--schema",
    "schema_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The swarm's attribute schema (TOML).",
)
@click.argument("expression", required=False)
def check(schema_path: Path, expression: str | None) -> None:
    """Validate a schema file and, if given, a subscription EXPRESSION.

    Prints the normalized subscription; exits 2 with a pointed message on error.
    """
    from vinifera.errors import SchemaError
    from vinifera.expr import parse_subscription
    from vinifera.schema import Schema

    try:
        schema = Schema.load(schema_path)
        if expression is None:
            for attr in schema.attributes:
                bounds = "" if attr.min is None else f" [{attr.min}, {attr.max}]"
                click.echo(f"{attr.name}: {attr.type.value}{bounds}")
            return
        click.echo(str(parse_subscription(expression, schema)))
    except SchemaError as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(2)


@main.command("keygen")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
def keygen(path: Path) -> None:
    """Make an Ed25519 signing key at PATH (mode 0600; never replaces a file)
    and print its public key, for the --trust-key of the subscribers, and
    its fingerprint."""
    from vinifera.daemon.signing import SigningKey
    from vinifera.errors import ViniferaError

    key = SigningKey.generate()
    try:
        key.save(path)
    except ViniferaError as err:
        click.echo(f"Error: {err}", err=True)
        sys.exit(2)
    click.echo(f"public key:  {key.public.hex()}")
    click.echo(f"fingerprint: {key.fingerprint}")


# ----------------------------------------------------------------- the daemon

CONFIG_HELP = (
    "TOML file of option defaults: keys named like the options with '_' for '-' "
    "(listen, bootstrap = [...], schema, subscribe, ...), at top level or in a [node] "
    "table. Command-line options override environment variables, which override it."
)


def _load_config(ctx: click.Context, param: click.Parameter, value: Path | None) -> None:
    if value is None:
        return
    import tomllib

    try:
        data = tomllib.loads(value.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise click.BadParameter(f"cannot read {value}: {err}") from None
    except tomllib.TOMLDecodeError as err:
        raise click.BadParameter(f"{value}: {err}") from None
    data = data.get("node", data)
    # Settings are named like the options; click keys defaults by parameter name.
    names = {
        opt.lstrip("-").replace("-", "_"): p.name
        for p in ctx.command.params
        if p.name != "config"
        for opt in p.opts
        if opt.startswith("--")
    }
    unknown = sorted(set(data) - set(names))
    if unknown:
        raise click.BadParameter(
            f"{value}: unknown setting(s) {', '.join(unknown)} (known: {', '.join(sorted(names))})"
        )
    ctx.default_map = {**(ctx.default_map or {}), **{names[k]: v for k, v in data.items()}}


@main.command("run")
@click.option(
    "--config",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    is_eager=True,
    expose_value=False,
    callback=_load_config,
    help=CONFIG_HELP,
)
@click.option(
    "--listen",
    default="127.0.0.1:7000",
    show_default=True,
    envvar="VINIFERA_LISTEN",
    show_envvar=True,
    help="UDP address to bind (IP:PORT; port 0 picks a free one).",
)
@click.option(
    "--advertise",
    envvar="VINIFERA_ADVERTISE",
    show_envvar=True,
    help="Address peers reach this node at (default: the listen address; "
    "required when listening on 0.0.0.0).",
)
@click.option(
    "--bootstrap",
    multiple=True,
    envvar="VINIFERA_BOOTSTRAP",
    show_envvar=True,
    help="IP:PORT of a live node to join through (repeatable; none starts a new overlay).",
)
@click.option(
    "--schema",
    "schema_path",
    required=True,
    envvar="VINIFERA_SCHEMA",
    show_envvar=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The swarm's attribute schema (TOML).",
)
@click.option(
    "--subscribe",
    "expression",
    envvar="VINIFERA_SUBSCRIBE",
    show_envvar=True,
    help="Subscription expression, e.g. 'temp in [0, 5] and city == \"Oslo\"'.",
)
@click.option(
    "--log-file",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar="VINIFERA_LOG_FILE",
    show_envvar=True,
    help="Node log, JSON lines (docs/logs.md); appended to.",
)
@click.option(
    "--control",
    envvar="VINIFERA_CONTROL",
    show_envvar=True,
    help="Control endpoint for publish/subscribe/status: a Unix socket path (mode 0600: "
    "only this user), or HOST:PORT on loopback, which needs --control-token-file.",
)
@click.option(
    "--control-token-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    envvar="VINIFERA_CONTROL_TOKEN_FILE",
    show_envvar=True,
    help="Secret (>= 16 bytes) that every control request must prove it holds; "
    "required for a TCP control endpoint.",
)
@click.option(
    "--signing-key-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    envvar="VINIFERA_SIGNING_KEY_FILE",
    show_envvar=True,
    help="Ed25519 key (PEM, from `vinifera-node keygen`): seal the events this node "
    "publishes, and name the node by the key's fingerprint in diagnostics and status.",
)
@click.option(
    "--trust-key",
    "trust_keys",
    multiple=True,
    metavar="HEX",
    help="Accept only events sealed by this public key (64 hex digits, as keygen prints; "
    "repeat for several). Copies that are not are dropped and counted.",
)
@click.option(
    "--require-signed",
    is_flag=True,
    help="Accept only sealed events, by any key (implied by --trust-key).",
)
@click.option(
    "--metrics",
    metavar="[HOST:]PORT",
    envvar="VINIFERA_METRICS",
    show_envvar=True,
    help="Serve Prometheus metrics at http://HOST:PORT/metrics (a PORT alone: on "
    "127.0.0.1). Off by default; the README lists the metrics.",
)
@click.option(
    "--network-key-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    envvar="VINIFERA_NETWORK_KEY_FILE",
    show_envvar=True,
    help="Shared secret (>= 16 bytes): only nodes holding it can talk to this one.",
)
@click.option(
    "--replay-skew",
    type=FiniteRange(min=0.001),
    default=30.0,
    show_default=True,
    help="With a network key: refuse datagrams stamped more than this many seconds from this "
    "node's clock (replay protection); the swarm's clocks must agree this well.",
)
@click.option(
    "--period",
    type=FiniteRange(min=0.01),
    default=1.0,
    show_default=True,
    envvar="VINIFERA_PERIOD",
    help="Gossip period in seconds (timeouts scale with it; all nodes should agree).",
)
@click.option(
    "--system",
    type=click.Choice(SYSTEMS),
    default="vinifera",
    show_default=True,
    help="The system's profile (vinifera/protocol/config.py): Vinifera, or the paper's baseline.",
)
@click.option(
    "--friends",
    type=click.IntRange(min=0),
    help="Friend links (K_f): to the peers whose subscriptions overlap this one's most.  "
    f"[default: {PROFILES['vinifera'].friends}; baseline: {PROFILES['baseline'].friends}]",
)
@click.option(
    "--small-world",
    type=click.IntRange(min=0),
    help="Small-world links (K_sw): long links at harmonic distances, for short routes. "
    "Besides these a node keeps 2 ring links; friend slots nobody fills go to small-world "
    f"links.  [default: {PROFILES['vinifera'].small_world}; "
    f"baseline: {PROFILES['baseline'].small_world}]",
)
@click.option(
    "--peer-rate",
    type=FiniteRange(min=0.001),
    default=500.0,
    show_default=True,
    help="Datagrams per second one peer (source port) may send us (token bucket; a datagram "
    "costs 1 plus 1 per 4 KiB); the excess is dropped unread.",
)
@click.option(
    "--peer-burst",
    type=FiniteRange(min=1),
    default=1000.0,
    show_default=True,
    help="Datagrams one peer may send at once after a quiet spell (the token bucket's size).",
)
@click.option(
    "--host-rate",
    type=FiniteRange(min=0.001),
    default=2000.0,
    show_default=True,
    help="Datagrams per second one source host may send us, all its ports together.",
)
@click.option("--host-burst", type=FiniteRange(min=1), default=4000.0, show_default=True,
              help="The host bucket's size.")  # fmt: skip
@click.option(
    "--ports-per-host",
    type=click.IntRange(min=1),
    default=64,
    show_default=True,
    help="Source ports of one host admitted at once. Nodes sharing an IP count as one host: "
    "raise this to run more nodes than this on one address.",
)
@click.option(
    "--ipv6-prefix",
    type=click.IntRange(16, 128),
    default=64,
    show_default=True,
    help="IPv6 addresses within one prefix of this length count as one host.",
)
@click.option(
    "--ipv4-prefix",
    type=click.IntRange(8, 32),
    default=32,
    show_default=True,
    help="IPv4 addresses within one prefix of this length count as one host.",
)
@click.option(
    "--links-per-host",
    type=click.IntRange(min=0),
    default=2,
    show_default=True,
    help="Routing links to one host at most, never both ring links (0: no cap): Sybils on "
    "one machine cannot take this node's links. A host is a --link-ipv4-prefix network.",
)
@click.option(
    "--link-ipv4-prefix",
    type=click.IntRange(8, 32),
    default=24,
    show_default=True,
    help="IPv4 addresses within one prefix of this length are one host for --links-per-host.",
)
@click.option(
    "--link-ipv6-prefix",
    type=click.IntRange(16, 128),
    default=64,
    show_default=True,
    help="IPv6 addresses within one prefix of this length are one host for --links-per-host.",
)
@click.option(
    "--loopback-exempt/--no-loopback-exempt",
    "loopback_links_exempt",
    default=True,
    show_default=True,
    help="Loopback peers are each their own host for --links-per-host (local swarms).",
)
@click.option(
    "--max-datagram",
    type=click.IntRange(576, 60_000),
    default=1200,
    show_default=True,
    help="Largest datagram sent, in bytes; bigger messages go as fragments. The default "
    "crosses any internet path without IP fragmentation (which NATs and firewalls drop).",
)
@click.option(
    "--recv-buffer",
    type=click.IntRange(min=4096),
    default=4 << 20,
    show_default=True,
    help="UDP receive buffer (SO_RCVBUF) in bytes; capped by net.core.rmem_max.",
)
@click.option(
    "--seed",
    type=int,
    help="Seed of the node's random choices (default: from the OS). Give each restart its own: "
    "the same seed draws the same event ids again.",
)
@click.option(
    "--deliveries/--no-deliveries",
    default=True,
    show_default=True,
    help="Print each delivered event as one JSON line on stdout.",
)
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default="info",
    show_default=True,
    help="Level of the diagnostics written to stderr as JSON lines.",
)
def run(
    schema_path: Path,
    expression: str | None,
    network_key_file: Path | None,
    control_token_file: Path | None,
    signing_key_file: Path | None,
    trust_keys: tuple[str, ...],
    require_signed: bool,
    deliveries: bool,
    log_level: str,
    **options,
) -> None:
    """Run a peer until SIGINT or SIGTERM, then leave gracefully.

    Delivered events go to stdout, one JSON object per line:
    {"t": ..., "eid": ..., "hops": ..., "values": {...}}. Diagnostics go to
    stderr as JSON lines. Example:

      vinifera-node run --listen 127.0.0.1:7001 --bootstrap 127.0.0.1:7000 \\
          --schema schema.toml --subscribe 'temp in [0, 5]' --control /tmp/n1.sock
    """  # fmt: skip
    from vinifera.daemon.control import ControlToken
    from vinifera.daemon.diagnostics import configure
    from vinifera.daemon.settings import NodeSettings
    from vinifera.daemon.signing import SealPolicy, SigningKey, parse_public_key
    from vinifera.errors import ViniferaError
    from vinifera.expr import parse_subscription
    from vinifera.schema import Schema
    from vinifera.wire import NetworkKey

    configure(log_level)
    try:
        schema = Schema.load(schema_path)
        sub = None if expression is None else parse_subscription(expression, schema)
        key = None if network_key_file is None else NetworkKey.load(network_key_file)
        token = None if control_token_file is None else ControlToken.load(control_token_file)
        signer = None if signing_key_file is None else SigningKey.load(signing_key_file)
        policy = None
        if trust_keys or require_signed:
            policy = SealPolicy(parse_public_key(k) for k in trust_keys)
        settings = NodeSettings(
            schema=schema, subscription=sub, network_key=key, control_token=token,
            signing_key=signer, seal_policy=policy,
            bootstrap=tuple(options.pop("bootstrap")), **options,
        )  # fmt: skip
    except ViniferaError as err:
        raise click.UsageError(str(err)) from None
    import trio

    failed: OSError | ViniferaError | None = None
    try:
        trio.run(_serve, settings, deliveries)
    except* (OSError, ViniferaError) as group:  # (trio's nursery wraps it in a group)
        failed = group.exceptions[0]  # type: ignore[assignment]
        while isinstance(failed, BaseExceptionGroup):
            failed = failed.exceptions[0]
    if isinstance(failed, ViniferaError):  # e.g. a control socket another node answers on
        click.echo(f"Error: {failed}", err=True)
        sys.exit(2)
    if failed is not None:
        what = failed.strerror or str(failed)
        click.echo(f"Error: cannot run the node on {settings.listen}: {what}", err=True)
        sys.exit(2)


async def _serve(settings, print_deliveries: bool) -> None:
    import json
    import signal

    import trio

    from vinifera.daemon.runner import NodeRunner
    from vinifera.gcpolicy import settle_for_daemon

    settle_for_daemon()  # this process is the node's: imports done, no state yet
    runner = NodeRunner(settings)
    if print_deliveries:

        def show(d) -> None:
            sys.stdout.write(json.dumps(d.to_json()) + "\n")
            sys.stdout.flush()

        runner.add_listener(show)

    async def stop_on_signal(signals) -> None:
        async for _ in signals:
            runner.stop()
            return

    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(stop_on_signal, signals)
            await runner.run()
            nursery.cancel_scope.cancel()


def _control_option(f):
    f = click.option(
        "--control-token-file",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        envvar="VINIFERA_CONTROL_TOKEN_FILE",
        show_envvar=True,
        help="The node's control token (as given to `run --control-token-file`).",
    )(f)
    return click.option(
        "--control",
        required=True,
        envvar="VINIFERA_CONTROL",
        show_envvar=True,
        help="The node's control endpoint (as given to `run --control`).",
    )(f)


def _ask(control: str, token_file: Path | None, payload: dict) -> dict:
    from vinifera.daemon.control import ControlError, ControlToken, request
    from vinifera.errors import ViniferaError

    try:
        token = None if token_file is None else ControlToken.load(token_file)
    except ViniferaError as err:
        raise click.UsageError(str(err)) from None
    try:
        return request(control, payload, token=token)
    except ControlError as err:
        raise click.ClickException(str(err)) from None


@main.command("publish")
@_control_option
@click.argument("assignments", nargs=-1, required=True)
def publish(control: str, control_token_file: Path | None, assignments: tuple[str, ...]) -> None:
    """Publish an event through a running node: ATTR=VALUE ...

    Prints the event id. Example: vinifera-node publish --control /tmp/n1.sock temp=3.5
    """
    payload = {"op": "publish", "assignments": list(assignments)}
    click.echo(_ask(control, control_token_file, payload)["eid"])


@main.command("subscribe")
@_control_option
@click.option("--none", "clear", is_flag=True, help="Unsubscribe (receive nothing).")
@click.argument("expression", required=False)
def subscribe(
    control: str, control_token_file: Path | None, clear: bool, expression: str | None
) -> None:
    """Change a running node's subscription to EXPRESSION."""
    if clear == (expression is not None):
        raise click.UsageError("give an EXPRESSION or --none (not both)")
    result = _ask(control, control_token_file, {"op": "subscribe", "expr": expression})
    click.echo(result["subscription"] or "(no subscription)")


@main.command("status")
@_control_option
def status(control: str, control_token_file: Path | None) -> None:
    """A running node's state as JSON: identifier, links, primary attribute,
    CRT rows and counters of sent, received, dropped and bad messages."""
    import json

    click.echo(json.dumps(_ask(control, control_token_file, {"op": "status"}), indent=2))


if __name__ == "__main__":
    main()
