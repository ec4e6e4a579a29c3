"""AutoCode engine: runs AI coding tasks inside a person's git repository.

This package knows nothing of LSP or editors; the CLI and the language server
call its public functions. Heavy imports live inside the functions that need them.
"""

__version__ = "0.1.0"

# The name to install from the package index (the import packages stay `autocode`
# and `autocode_lsp`; the commands stay `autocode` and `autocode-lsp`).
DIST_NAME = "autocode-lsp"
