"""One module per feature area; each binds its handlers with `@command(name)` (`autocode_lsp.commands`).

The server imports a module when one of its commands is first called (see
`commands.handler_for`), so `initialize` does not pay for them.
"""
