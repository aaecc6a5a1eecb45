"""The README runs as written (issue 29, item 3): every command of the README's tour and of the
docs' task pages, read out of the Markdown itself, is run in order on a fresh store after
`make run`'s rows, and exits as written. Before, the tour failed when followed in order: after
`make run`, 3 of its 4 compares were exit 2 (a name two runs carried; `core/hybrid`, which the
sweep had named `core/hybrid w=0.5`; the plan's compare).

What counts as a command, and how it is run:

- the ```bash fences of the README's sections `README_SECTIONS` and of every page of
  mkdocs.yml's nav outside `NOT_TASKS`, in nav order (a plain fence is a transcript, not run);
  a line ending in `\\` goes on, a line starting with `#` is a comment;
- it must exit 0, or the N of a `# exit N` comment after it;
- `<name>` is the value an earlier command printed as `name: value` (`<plan_id>`, `<run_id>`);
- `python -m cortex_exp...` runs in this process, through the entry point's `main(argv)`, with
  any `VAR=value` before it set for the call; anything else (`python examples/...`, `mlflow`) in a
  process of its own, and a command ending in `&` in the background, until the test ends, on a
  free port instead of the one written (rewritten in the rest of its page);
- `SKIPPED` and `SKIPPED_PAGES` name what is not run, and why; `HUMAN` does what a page asks its
  reader to do between two commands, `INPUTS` writes the files a page calls the reader's own.
  Each entry must match the docs (`test_the_tables_name_only_what_the_docs_hold`).

The working folder is a fresh clone's: `examples/` (a link to the repository's), the demo data
under `data/demo/` and the store `mlflow.db` beside them. The demo data is the generator's own,
cut to its `PROJECTS` largest projects (a few dozen queries instead of 433), so that the dense
runs encode a few hundred documents, not 1,888: the commands name no size, and the data they
find is what `make run` would have made of it.
"""

from __future__ import annotations

import csv
import importlib
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from support import ROOT
from support.cli import MAINS
from support.tiny import write_jsonl

README_SECTIONS = ("Two commands", "A five-minute tour")
NOT_TASKS = {"Home", "Reference", "Measured", "Contributing"}  # mkdocs.yml's nav sections that are not tasks
SKIPPED_PAGES = {
    "team-setup.md": "a PostgreSQL server, an MLflow server on it and a Ray head: tests/e2e/test_team_setup.py",
}
SKIPPED = {
    "make run": "run first, as the rows of its Makefile recipe (`make_run`)",
    "make test": "this test suite",
    ". .venv/bin/activate": "the shell's: every command runs on this test's Python, the venv's",
    "mlflow ui --backend-store-uri sqlite:///mlflow.db": "a server until stopped: tests/e2e/test_browser.py drives it",
    ".venv/bin/mlflow ui --backend-store-uri sqlite:///mlflow.db": "the same server",
}
PROJECTS = 4
PRINTED = re.compile(r"^([a-z_]+): (\S+)$")  # `plan_id: <id>`, `run_id: <id>`, ...
PLACEHOLDER = re.compile(r"<([a-z_]+)>")
EXIT = re.compile(r"(?:^|\s)#\s*exit (\d+)\b")


@dataclass(frozen=True)
class Command:
    page: str
    line: int
    text: str  # as written, continuation lines joined
    exit: int


def bash_commands(page: str, text: str, first_line: int = 1) -> list[Command]:
    """The commands of the ```bash fences of `text` (a page, or a section of one starting at
    line `first_line`)."""
    out, fence, pending, start = [], False, "", 0
    for number, raw in enumerate(text.splitlines(), start=first_line):
        line = raw.strip()
        if line.startswith("```"):
            fence = line == "```bash" if not fence else False
            continue
        if not fence or (not pending and (not line or line.startswith("#"))):
            continue
        start = start or number
        if line.endswith("\\"):
            pending += line[:-1].rstrip() + " "
            continue
        whole, pending = pending + line, ""
        found = EXIT.search(whole)
        out.append(Command(page, start, whole, int(found.group(1)) if found else 0))
        start = 0
    return out


def readme_commands() -> list[Command]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    out, line = [], 1
    for section in re.split(r"(?m)^(?=## )", text):
        if section.startswith("## ") and section[3:].splitlines()[0].strip() in README_SECTIONS:
            out += bash_commands("README.md", section, line)
        line += section.count("\n")
    return out


def task_pages() -> list[str]:
    """The pages of mkdocs.yml's nav outside `NOT_TASKS`, in nav order."""
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]

    def files(entry) -> list[str]:
        if isinstance(entry, str):
            return [entry]
        if isinstance(entry, list):
            return [f for e in entry for f in files(e)]
        return [f for title, value in entry.items() if title not in NOT_TASKS for f in files(value)]

    return files(nav)


def doc_commands() -> list[Command]:
    out = readme_commands()
    for page in task_pages():
        out += bash_commands(f"docs/{page}", (ROOT / "docs" / page).read_text(encoding="utf-8"))
    return out


def make_run() -> Command:
    """`make run` as its Makefile recipe says it, on this test's Python."""
    lines = (ROOT / "Makefile").read_text(encoding="utf-8").splitlines()
    recipe = lines[lines.index(next(line for line in lines if line.startswith("run:"))) + 1].strip()
    return Command("Makefile", 0, recipe.replace("$(PY)", "python"), 0)


# --- what a page asks of its reader ----------------------------------------------------------


def fill_review(folder: Path) -> None:
    """docs/unjudged.md: "fill the column verdict: positive or noise" — each document B surfaced
    at rank 1 positive, the rest noise."""
    path = folder / "review.csv"
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert rows, "review.csv lists no document to judge"
    for row in rows:
        row["verdict"] = "positive" if row["surfaced_by"] == "B" and row["rank_b"] == "1" else "noise"
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def write_beir(path: Path) -> None:
    """docs/golden-sets.md's `path/to/beir`: a BEIR collection of the reader's (a small one)."""
    docs = [
        {"_id": f"b{i}", "title": f"Note {i}", "text": f"Retry the ingest worker {i} times on reset"} for i in range(6)
    ]
    write_jsonl(path / "corpus.jsonl", docs)
    write_jsonl(path / "queries.jsonl", [{"_id": "q1", "text": "ingest retry"}, {"_id": "q2", "text": "note 3"}])
    (path / "qrels").mkdir()
    (path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tb1\t1\nq1\tb2\t0\nq2\tb3\t1\n")


HUMAN = {"python -m cortex_exp.golden add-judgments golden/demo review.csv --out golden/demo-reviewed": fill_review}
INPUTS = {"path/to/beir": write_beir}


def tiny_demo(folder: Path, scratch: Path) -> None:
    """The demo generator's data, cut to its `PROJECTS` projects with the most serves (and the
    documents of no project), at `folder/data/demo/` where `make run` writes it."""
    from cortex_exp.demo import generate

    corpus_path, serves_path = generate(scratch)
    docs = [json.loads(line) for line in corpus_path.read_text(encoding="utf-8").splitlines()]
    serves = [json.loads(line) for line in serves_path.read_text(encoding="utf-8").splitlines()]
    kept = {p for p, _ in Counter(s["project"] for s in serves).most_common(PROJECTS)}
    docs = [d for d in docs if d["project"] in kept or d["project"] is None]
    ids = {d["id"] for d in docs}
    serves = [{**s, "items": [i for i in s["items"] if i["doc_id"] in ids]} for s in serves if s["project"] in kept]
    write_jsonl(folder / "data/demo/corpus.jsonl", docs)
    write_jsonl(folder / "data/demo/serves.jsonl", serves)


# --- running them ----------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Session:
    """The commands run so far, in one working folder: what they printed, the servers they left
    in the background, the ports rewritten."""

    def __init__(self, folder: Path, capsys, monkeypatch):
        self.folder, self.capsys, self.monkeypatch = folder, capsys, monkeypatch
        self.printed: dict[str, str] = {}
        self.background: list[subprocess.Popen] = []
        self.ports: dict[str, str] = {}
        self.page = ""

    def words(self, command: Command) -> list[str]:
        if command.page != self.page:
            self.page, self.ports = command.page, {}
        text = command.text
        for old, new in self.ports.items():
            text = text.replace(old, new)
        words = shlex.split(text, comments=True)
        for i, word in enumerate(words):
            for name in PLACEHOLDER.findall(word):
                assert name in self.printed, f"{where(command)}: <{name}>: no command before it printed `{name}: ...`"
                words[i] = word.replace(f"<{name}>", self.printed[name])
        return words

    def run(self, command: Command) -> None:
        if bare(command) in HUMAN:
            HUMAN[bare(command)](self.folder)
        words = self.words(command)
        for word in words:
            if word in INPUTS and not (self.folder / word).exists():
                INPUTS[word](self.folder / word)
        env = {}
        while "=" in words[0] and not words[0].startswith(("python", "-")):
            key, _, value = words.pop(0).partition("=")
            env[key] = value
        if words[-1] == "&":
            return self.start(command, words[:-1], env)
        if words[:2] == ["python", "-m"] and words[2] in MAINS:
            code, out, err = self.in_process(importlib.import_module(MAINS[words[2]]).main, words[3:], env)
        else:
            code, out, err = self.in_a_process(words, env)
        assert code == command.exit, f"{where(command)}: exit {code}, written {command.exit}\n{err[-4000:]}"
        for line in out.splitlines():
            if found := PRINTED.match(line.strip()):
                self.printed[found.group(1)] = found.group(2)

    def in_process(self, main, argv: list[str], env: dict) -> tuple[int, str, str]:
        self.capsys.readouterr()
        with self.monkeypatch.context() as m:
            for key, value in env.items():
                m.setenv(key, value)
                if key == "PYTHONPATH":
                    for entry in reversed(value.split(os.pathsep)):
                        m.syspath_prepend(str(self.folder / entry))
            try:
                code = main(argv)
            except SystemExit as done:
                code = done.code
        out, err = self.capsys.readouterr()
        return code or 0, out, err

    def process_env(self, env: dict) -> dict:
        paths = [str(self.folder / p) for p in env.pop("PYTHONPATH", "").split(os.pathsep) if p]
        return {**os.environ, **env, "PYTHONPATH": os.pathsep.join([*paths, str(ROOT)])}

    def program(self, words: list[str]) -> list[str]:
        """`python` is this test's Python; another program, the one installed beside it."""
        if words[0] == "python":
            return [sys.executable, *words[1:]]
        beside = Path(sys.executable).with_name(words[0])
        return [str(beside) if beside.exists() else words[0], *words[1:]]

    def in_a_process(self, words: list[str], env: dict) -> tuple[int, str, str]:
        done = subprocess.run(
            self.program(words), cwd=self.folder, env=self.process_env(env), capture_output=True, text=True, timeout=600
        )
        return done.returncode, done.stdout, done.stderr

    def start(self, command: Command, words: list[str], env: dict) -> None:
        """A server in the background, on a free port, until the test ends."""
        old = words[words.index("--port") + 1]
        new = str(free_port())
        self.ports = {f"--port {old}": f"--port {new}", f":{old}/": f":{new}/"}
        words[words.index("--port") + 1] = new
        log = (self.folder / f"background-{len(self.background)}.log").open("w")
        proc = subprocess.Popen(
            self.program(words), cwd=self.folder, env=self.process_env(env), stdout=log, stderr=subprocess.STDOUT
        )
        self.background.append(proc)
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            assert proc.poll() is None, f"{where(command)}: ended with {proc.returncode}\n{Path(log.name).read_text()}"
            try:
                socket.create_connection(("127.0.0.1", int(new)), timeout=1).close()
                return
            except OSError:
                time.sleep(0.5)
        pytest.fail(f"{where(command)}: not listening on port {new} after 600 s")

    def stop(self) -> None:
        for proc in self.background:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def bare(command: Command) -> str:
    """The command without the comment after it."""
    return command.text.split("#")[0].strip()


def where(command: Command) -> str:
    return f"{command.page}:{command.line}: {command.text}"


def test_the_tables_name_only_what_the_docs_hold():
    """Fast: the commands are found (the tour's first, a `# exit N`), and every entry of the
    tables above is a command or a page the docs hold (a renamed command is run, not skipped)."""
    commands = doc_commands()
    texts = {bare(c) for c in commands}
    assert readme_commands()[0].text.startswith("make run")
    assert "python -m cortex_exp row=core retriever=bm25_v1" in texts
    assert any(c.exit == 2 for c in commands), "no page shows a command that fails"
    assert set(SKIPPED) <= texts, set(SKIPPED) - texts
    assert set(HUMAN) <= texts, set(HUMAN) - texts
    assert all(any(key in shlex.split(t, comments=True) for t in texts) for key in INPUTS)
    assert set(SKIPPED_PAGES) <= set(task_pages())
    # every entry point the docs run is run in this process (a process of its own costs seconds)
    modules = {w[2] for w in (shlex.split(t, comments=True) for t in texts) if w[:2] == ["python", "-m"]}
    assert modules <= set(MAINS), modules - set(MAINS)
    assert "getting-started.md" in task_pages() and "interface.md" not in task_pages()
    assert make_run().text == "python -m cortex_exp -m 'row=glob(*,exclude=_*)'"


@pytest.mark.slow  # every command of the tour and the task pages: dozens of runs, a service with the model
def test_the_readme_and_the_task_pages_run_as_written(tmp_path, tmp_path_factory, capsys, monkeypatch):
    folder = tmp_path / "clone"
    folder.mkdir()
    (folder / "examples").symlink_to(ROOT / "examples")
    tiny_demo(folder, tmp_path_factory.mktemp("full-demo"))
    monkeypatch.chdir(folder)
    # the store the commands' default names (sqlite:///mlflow.db, here), by its absolute path: a
    # process keeps its MLflow clients by URI, and other tests of this process had other folders
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{folder}/mlflow.db")
    session = Session(folder, capsys, monkeypatch)
    ran, skipped = [], []
    try:
        session.run(make_run())
        for command in doc_commands():
            page = command.page.removeprefix("docs/")
            if page in SKIPPED_PAGES or bare(command) in SKIPPED:
                skipped.append(command)
                continue
            session.run(command)
            ran.append(command)
    finally:
        session.stop()
    assert len(ran) >= 30 and {c.page for c in ran} >= {"README.md", "docs/getting-started.md", "docs/decisions.md"}
    assert {c.page for c in skipped} >= {"README.md", "docs/team-setup.md"}
