"""The operator console: `/admin`, server-rendered pages behind the admin key (no script, no
build step). Pages: overview, failures by reference id, accounts, links and usage; each calls
the same stores and desks as the JSON admin API and the CLI."""

from service.console.routes import add_console
from service.console.sources import ConnectionState, ConsoleSources, LeaseState

__all__ = ["ConnectionState", "ConsoleSources", "LeaseState", "add_console"]
