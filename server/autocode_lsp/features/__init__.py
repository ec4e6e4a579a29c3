"""One module per feature area; each exports `HANDLERS: {command name: async handler}`.

The server imports a module when one of its commands is first called (see
`server.handler_for`), so `initialize` does not pay for them.
"""
