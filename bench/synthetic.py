"""A seeded synthetic BEIR collection for the scale bench: Zipfian words, planted relevance.

    .venv/bin/python bench/synthetic.py OUT_DIR --docs 1000000 [--queries 5000] [--seed 14]
                                        [--shape titled|small]

Writes OUT_DIR/corpus.jsonl, queries.jsonl and qrels/test.tsv (BEIR's format; import it with
`python -m cortex_exp.golden import-beir OUT_DIR --out GOLDEN_DIR`).

Two shapes (`SHAPES`), the same generator:
- `titled` (the default, the collection of every earlier figure): a vocabulary of 200,000
  words; a document has 70..130 body words (mean 100) and a title of 4..7 words from the rarer
  part of the vocabulary (rank >= TITLE_MIN_RANK), so that a title is a specific known-answer
  query.
- `small`: a vocabulary of 30,000 words, 100 body words a document, no titles — an empty `title`,
  as BEIR writes a document without one (Anserini's BeirFlatCollection needs the key: without it
  every document is an exception and 0 are indexed) (issue 33: the collection on which Lucene
  indexes faster than we do). The probe asks a document's first words.
In both:
- Vocabulary: pronounceable pseudo-words (syllables), none a stop word, drawn with
  Zipf-Mandelbrot probabilities ~ 1 / (rank + 2.7) ** 1.07.
- A query: a target document's three rarest body words plus two common words. Its relevant
  documents are the target and a partner document into which two of those rare words are
  planted (they replace its first two words); one random other document is judged noise.
Everything follows from the seed: the same arguments write the same bytes.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import NamedTuple

import numpy as np


class Shape(NamedTuple):
    """What a collection's documents look like."""

    vocab: int  # distinct words
    words: tuple[int, int]  # body words a document, lowest and highest
    titles: bool  # whether a document has a title


SHAPES = {
    "titled": Shape(vocab=200_000, words=(70, 130), titles=True),
    "small": Shape(vocab=30_000, words=(100, 100), titles=False),
}
VOCAB = SHAPES["titled"].vocab
TITLE_MIN_RANK = 2_000
COMMON = 200
_ONSETS = ["b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z", "br", "tr", "st"]
_VOWELS = ["a", "e", "i", "o", "u", "ai", "ou"]


def vocabulary(rng: np.random.Generator, size: int = VOCAB) -> np.ndarray:
    """`size` distinct pseudo-words of 2..4 syllables (no stop word: every one has >= 4 letters)."""
    words: dict[str, None] = {}
    while len(words) < size:
        n = size - len(words)
        syllables = rng.integers(2, 5, n)
        onsets = rng.integers(0, len(_ONSETS), (n, 4))
        vowels = rng.integers(0, len(_VOWELS), (n, 4))
        for i in range(n):
            word = "".join(_ONSETS[onsets[i, j]] + _VOWELS[vowels[i, j]] for j in range(syllables[i]))
            words.setdefault(word, None)
    return np.array(list(words)[:size], dtype=object)


def zipf_cdf(size: int, s: float = 1.07, q: float = 2.7) -> np.ndarray:
    p = 1.0 / (np.arange(size) + q) ** s
    return np.cumsum(p / p.sum())


def draw(rng: np.random.Generator, cdf: np.ndarray, n: int, low: int = 0) -> np.ndarray:
    """n word ranks from the Zipf distribution, restricted to ranks >= low."""
    start = cdf[low - 1] if low else 0.0
    u = start + rng.random(n) * (1.0 - start)
    return np.minimum(np.searchsorted(cdf, u), len(cdf) - 1).astype(np.int32)


def bodies(
    rng: np.random.Generator, cdf: np.ndarray, n_docs: int, words: tuple[int, int] = SHAPES["titled"].words
) -> tuple[np.ndarray, np.ndarray]:
    """(word ranks of every body, one after the other; offsets, n_docs + 1); a body has
    words[0]..words[1] words (one length drawn nothing from the seed)."""
    low, high = words
    lengths = rng.integers(low, high + 1, n_docs) if high > low else np.full(n_docs, low, dtype=np.int64)
    offsets = np.zeros(n_docs + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return draw(rng, cdf, int(offsets[-1])), offsets


def plant_queries(rng, cdf, words, offsets, n_queries: int) -> list[tuple[list[int], int, int, int]]:
    """(query word ranks, target, partner, noise document) per query; plants the rare words."""
    n_docs = len(offsets) - 1
    picks = rng.choice(n_docs, size=(n_queries, 3), replace=n_queries * 3 > n_docs)
    queries = []
    for target, partner, noise in picks.tolist():
        body = words[offsets[target] : offsets[target + 1]]
        rare = [int(w) for w in np.unique(body)[-3:]]
        words[offsets[partner] : offsets[partner] + 2] = rare[-2:]
        common = draw(rng, cdf[:COMMON] / cdf[COMMON - 1], 2).tolist()
        queries.append((rare + common, target, partner, noise))
    return queries


def write_collection(out: Path, n_docs: int, n_queries: int, seed: int = 14, shape: str = "titled") -> None:
    """The collection of `shape` (`SHAPES`); the titled shape writes the bytes it always wrote."""
    form = SHAPES[shape]
    rng = np.random.default_rng(seed)
    vocab = vocabulary(rng, form.vocab)
    cdf = zipf_cdf(len(vocab))
    words, offsets = bodies(rng, cdf, n_docs, form.words)
    queries = plant_queries(rng, cdf, words, offsets, n_queries)
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    with (out / "corpus.jsonl").open("w", encoding="utf-8") as fh:
        titled = _titles(rng, cdf, vocab, n_docs) if form.titles else None
        for i in range(n_docs):
            text = " ".join(vocab[words[offsets[i] : offsets[i + 1]]].tolist())
            doc = {"_id": f"d{i}", "title": next(titled) if titled else "", "text": text}
            fh.write(json.dumps(doc) + "\n")
    with (out / "queries.jsonl").open("w", encoding="utf-8") as fh, (out / "qrels" / "test.tsv").open("w") as qrels:
        qrels.write("query-id\tcorpus-id\tscore\n")
        for q, (ranks, target, partner, noise) in enumerate(queries):
            order = rng.permutation(len(ranks))
            fh.write(json.dumps({"_id": f"q{q}", "text": " ".join(vocab[[ranks[i] for i in order]].tolist())}) + "\n")
            judged = {f"d{target}": 1, f"d{partner}": 1}
            judged.setdefault(f"d{noise}", 0)
            qrels.writelines(f"q{q}\t{doc}\t{score}\n" for doc, score in judged.items())


def _titles(rng: np.random.Generator, cdf: np.ndarray, vocab: np.ndarray, n_docs: int):
    """Each document's title in turn: 4..7 words of rank >= TITLE_MIN_RANK (drawn at once)."""
    lengths = rng.integers(4, 8, n_docs)
    ranks = draw(rng, cdf, int(lengths.sum()), TITLE_MIN_RANK)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    return (" ".join(vocab[ranks[offsets[i] : offsets[i + 1]]].tolist()) for i in range(n_docs))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--docs", type=int, required=True)
    ap.add_argument("--queries", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=14)
    ap.add_argument("--shape", choices=sorted(SHAPES), default="titled")
    args = ap.parse_args(argv)
    write_collection(args.out, args.docs, args.queries, args.seed, args.shape)
    print(f"wrote {args.docs} documents and {args.queries} queries to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
