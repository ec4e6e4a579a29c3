"""The repository map of the implementer's first message: cited files first, definitions, a size limit."""

from __future__ import annotations

from pathlib import Path

from autocode.providers import repomap
from support import write_files


def test_the_map_lists_cited_files_first_with_their_definitions(tmp_path: Path) -> None:
    write_files(tmp_path, {
        "a.py": "import os\n\nclass Shop:\n    def __init__(self, name):\n        pass\n\n    def total(self):\n        return 0\n\n"
                "async def fetch(url, *, timeout=3, **kw):\n    pass\n",
        "b/broken.py": "def (:\n",
        "c/app.ts": "export function render(x: number) {}\nexport class View {}\nconst helper = (a) => a\n",
        "d/main.go": "package main\n\nfunc (s *Server) Serve() {}\nfunc main() {}\ntype Server struct{}\n",
        "notes.md": "# notes\n",
    })
    text = repomap.render(tmp_path, ["notes.md"], ["a.py", "b/broken.py", "c/app.ts", "d/main.go", "notes.md", "gone.py"])
    lines = text.splitlines()
    assert lines[0] == "notes.md"
    assert "a.py: class Shop [__init__, total], def fetch(url, timeout, **kw)" in lines
    assert "b/broken.py" in lines  # unparsable: listed by path
    assert "c/app.ts: render, View, helper" in lines
    assert "d/main.go: Serve, main, Server" in lines
    assert not any("gone.py" in line for line in lines)  # not in the copy


def test_the_map_stops_at_its_limit_and_says_how_many_files_are_left(tmp_path: Path) -> None:
    write_files(tmp_path, {f"m{i:03d}.py": f"def f{i}():\n    pass\n" for i in range(300)})
    text = repomap.render(tmp_path, ["m299.py"], [f"m{i:03d}.py" for i in range(300)], limit=500)
    assert len(text) <= 560 and text.startswith("m299.py: def f299()")
    assert text.splitlines()[-1].startswith("(and ") and "list_files" in text
