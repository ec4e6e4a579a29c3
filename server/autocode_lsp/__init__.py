"""AutoCode's language server: protocol in, engine calls, protocol out."""

from autocode import __version__

__all__ = ["__version__"]
