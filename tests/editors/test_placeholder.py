def test_editor_suites_are_collected() -> None:
    # Replaced by the Neovim and VS Code suites; keeps pytest from exiting 5.
    assert True
