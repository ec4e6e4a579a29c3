"""Throwaway extensions: each adds one registry entry and one module, and a test shows it works end to end."""
