"""Agent CLIs run as the implementer ("engines"): Claude Code, Codex, Aider, OpenCode, Gemini.

The person chooses one with the `engine` setting (a flag or their user config: a repository
never chooses a program to run). It then plays the implementer role only; questions, plan
approval, proof, review, the three-way apply and learning stay AutoCode's. Each engine is one
adapter module (`base.Adapter`: its command line, environment and output parser) and one
`register(engine_kind(name, "module:Class"))` line in `autocode.providers`. Modules: `catalog`
(the settings an engine run takes, checked before a task starts), `runner` (any engine in the
sandboxed prep copy), `copy_state` (what it changed), `instructions` (what it is told),
`versions` (`--version`, cached), `found` (doctor's list of engines on PATH).
"""
