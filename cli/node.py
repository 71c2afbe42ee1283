"""`vinifera-node`: what a peer runs."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from vinifera import __version__


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


if __name__ == "__main__":
    main()
