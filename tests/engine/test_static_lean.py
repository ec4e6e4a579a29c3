"""The lean reader of the static embedding model: same vectors as the package's encoder, a few MB, loaded late."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from autocode.memory import embeddings, static_lean

pytest.importorskip("static_model")

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "memory"


def _texts() -> list[str]:
    rows = [
        line.split("\t")
        for name in ("memories.tsv", "queries.tsv")
        for line in (FIXTURES / name).read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    texts = [r[2] if len(r) > 2 else r[0] for r in rows]
    return [*texts, "Ünïcödé café — naïve 東京 ﬁle", "tab\tand\nnew line", "bell \x07 a\u200bb", "HELLO!!", "x"]


def _cos(a: list[float], b: list[float]) -> float:
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(x * x for x in b))
    return sum(x * y for x, y in zip(a, b, strict=True)) / (na * nb) if na and nb else float(na == nb)


def test_lean_vectors_match_the_package_encoder() -> None:
    import static_model

    texts = _texts()
    lean = static_lean.LeanStaticModel()
    mine = lean.encode_many(texts)
    theirs = static_model.get_embeddings(texts)
    worst = min(_cos(a, b) for a, b in zip(mine, theirs, strict=True))
    assert worst > 0.9999, worst
    assert len(texts) >= 100  # the whole evaluation set, not a sample


def test_big_and_small_batches_agree() -> None:
    lean = static_lean.LeanStaticModel()
    texts = _texts()[:3]
    one_by_one = [lean.encode(t) for t in texts]  # pure Python sums
    numpy_path = lean.encode_many(texts * 30)[:3]  # over NUMPY_BATCH: numpy sums
    for a, b in zip(one_by_one, numpy_path, strict=True):
        assert _cos(a, b) > 0.99999


def test_the_index_is_built_once_in_a_child_process_and_then_reused(tmp_path: Path) -> None:
    tokenizer = static_lean.model_dir() / "tokenizer.json"
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    code = textwrap.dedent(
        """
        import sys
        from autocode.memory import static_lean
        path = static_lean.ensure_index(static_lean.model_dir() / "tokenizer.json")
        print(path)
        print(int(path.stat().st_mtime_ns))
        static_lean.LeanStaticModel()
        print("json" in sys.modules and "static_model" not in sys.modules)
        """
    )
    first = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    second = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    path, stamp, native_untouched = first.stdout.split()
    assert Path(path).is_file() and Path(path).is_relative_to(tmp_path / "cache")
    assert second.stdout.split()[1] == stamp  # not rebuilt
    assert native_untouched == "True"  # the package's native encoder was never imported
    assert tokenizer.is_file()


def test_a_damaged_index_falls_back_to_the_package_encoder_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    index = static_lean.index_path(static_lean.model_dir() / "tokenizer.json")
    index.parent.mkdir(parents=True)
    index.write_bytes(b"not an index at all" * 10)
    embedder = embeddings.StaticEmbedder()
    vectors = embedder.embed(["the tests run with unittest"])
    assert embedder.how.startswith("package encoder (lean reader unavailable")
    assert len(vectors[0]) == 64 and abs(math.fsum(x * x for x in vectors[0]) - 1) < 1e-6
    assert index.read_bytes().startswith(b"not an index")  # left for a person to look at, not overwritten


def test_an_empty_store_answers_without_loading_the_model_or_numpy(tmp_path: Path) -> None:
    code = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from autocode.memory import MemoryContext, open_memory
        with open_memory(memory_path=Path({str(tmp_path / "m.sqlite3")!r}), embedding_provider="static") as m:
            result = m.search(MemoryContext(None, None), "how do the tests run")
            recall = m.recall(MemoryContext(None, None), "fix the login page")
            print(len(result.hits), m.choice.embedder._encode is None, "numpy" in sys.modules)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["0", "True", "False"], done.stdout + done.stderr


def test_a_first_save_on_an_empty_store_does_not_import_numpy(tmp_path: Path) -> None:
    """The save embeds its own memory (lean: an mmap and a few sums) but has nothing to compare it with."""
    code = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from autocode.memory import MemoryContext, open_memory
        ctx = MemoryContext(None, None)
        with open_memory(memory_path=Path({str(tmp_path / "m.sqlite3")!r}), embedding_provider="static") as m:
            m.save(ctx, "The test suite runs with unittest discovery from the tests folder.")
            print("numpy" in sys.modules, m.list(ctx)[0].embedding_model)
            m.save(ctx, "Release branches only take fixes that have a linked incident.")
            print("numpy" in sys.modules, len(m.store.vectors.buckets))
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    first, second = done.stdout.splitlines()
    assert first.split() == ["False", embeddings.StaticEmbedder.model], done.stdout + done.stderr
    # The second save compares with the first (its bucket's vectors load), in plain Python: one row.
    assert second.split() == ["False", "1"], done.stdout + done.stderr


def _rss_growth(code: str) -> float:
    wrapped = textwrap.dedent(
        """
        from pathlib import Path
        def rss():
            for line in Path("/proc/self/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        import autocode.memory.embeddings as e
        before = rss()
        """
    ) + textwrap.dedent(code) + "\nprint(rss() - before)\n"
    done = subprocess.run([sys.executable, "-c", wrapped], capture_output=True, text=True, check=True)
    return float(done.stdout.split()[-1])


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmRSS from /proc")
def test_the_lean_model_costs_a_few_mb_where_the_package_encoder_costs_hundreds() -> None:
    lean = _rss_growth("e.StaticEmbedder().embed(['the tests run with unittest discovery'])")
    package = _rss_growth("import static_model; static_model.get_embeddings(['the tests run with unittest'])")
    assert lean < 30, lean
    assert package > 5 * lean, (package, lean)
