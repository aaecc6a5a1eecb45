"""What a person sees in the MLflow UI, in a real browser: `mlflow ui` on 127.0.0.1 over a store
holding a rows multirun, a fusion-weight sweep and a comparison (built once for the module, on
the demo data, the dense side a loopback embedding server), opened in Debian's headless
Chromium. Each test starts as a new user (no local storage) and walks the way the README says:
the experiment opens on its runs, the sweep's jobs have names of their own, the description's
views open their runs, the comparison is one click from a compared run, `sweep.png` renders.

Screenshots go to `$CORTEX_TEST_ARTIFACTS` when set, else to a folder pytest keeps
(/dev/shm/pytest-of-<user>/pytest-<n>/screenshots0, tests/support/scratch.py); a failing test adds
`FAILED-<test>.png`.
`make screenshots` makes the README's (docs/screenshots/) with this module."""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient
from support.browser import Page, chromium, literal
from support.cli import run_main
from support.demo import build_demo
from support.embedding_server import EmbeddingServer
from support.fake_encoder import HashedBagEncoder
from support.servers import mlflow_ui
from support.stores import sqlite_store

SWEEP = "sweep: retriever.fusion.weight=0,0.5,1"
ROWS = "sweep: row=core,graph"
JOBS = {ROWS: ["core/bm25_v2", "graph/bm25_v2"], SWEEP: ["core/hybrid w=0", "core/hybrid w=0.5", "core/hybrid w=1"]}
COMPARISON = "core/bm25_v2 vs core/hybrid w=0.5"
RUN_NAMES = "div[col-id='attributes.`Run Name`'] a"
VIEW_COLUMNS = {f"tags.`{t}`" for t in ("row", "retriever", "decides", "degraded")}
VIEW_COLUMNS |= {f"metrics.`{m}`" for m in ("recall_at_24", "ndcg_at_10", "mrr", "n_queries")}
VIEW_COLUMNS |= {"params.`retriever.fusion.weight`"}  # the benchmark runs' view, as the README says
UNFOLD = "mlflow.experiment.metadata_editor.expand_button"  # the experiment description's
SCREEN_1440 = {"width": 1440, "height": 900, "deviceScaleFactor": 1, "mobile": False}  # a laptop's screen


@dataclass
class Store:
    uri: str
    experiment_id: str
    ids: dict[str, str]  # run name -> run id, every run of the store
    sweep_png: bytes  # the sweep parent's artifact, as logged
    queries: list[str]  # the golden set's query texts


def multirun(args: list[str], cwd: Path, env: dict) -> str:
    r = run_main(["cortex_exp", "-m", *args], cwd, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    last = r.stdout.strip().splitlines()[-1]
    assert last.startswith("parent_run_id: "), r.stdout[-2000:]
    return last.split()[1]


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Store:
    root = build_demo(tmp_path_factory.mktemp("browser-store"))
    uri = sqlite_store(root)
    env = {"MLFLOW_TRACKING_URI": uri, "CORTEX_CACHE_DIR": str(root / "cache"), "CORTEX_SPOOL_DIR": str(root / "spool")}
    data = [f"data.{k}={root}/{v}" for k, v in (("corpus", "data/demo/corpus.jsonl"), ("golden", "golden/demo"))]
    data += ["data=files", f"data.serves={root}/data/demo/serves.jsonl"]
    multirun(["row=core,graph", *data], root, env)
    encoder = HashedBagEncoder()  # a hashed bag of words behind a real embedding server, as in test_team_setup
    embedder = EmbeddingServer(lambda text: encoder.vector(text).tolist())
    try:
        weights = ["retriever=hybrid", "retriever.fusion.weight=0,0.5,1", f"retriever.dense.endpoint={embedder.url}"]
        sweep = multirun([*weights, *data], root, env)
    finally:
        embedder.stop()
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("cortex_exp")

    def job(where: str) -> str:
        (run,) = client.search_runs([experiment.experiment_id], f"tags.kind = 'benchmark' and {where}")
        return run.info.run_id

    a = job("tags.retriever = 'bm25_v2' and tags.row = 'core'")
    b = job("params.`retriever.fusion.weight` = '0.5'")
    r = run_main(["cortex_exp.compare", a, b], root, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert any(line.startswith("comparison_run_id: ") for line in (r.stdout + r.stderr).splitlines())

    runs = client.search_runs([experiment.experiment_id], max_results=100)
    assert len(runs) == 8  # 2 parents, 5 jobs, 1 comparison
    ids = {run.info.run_name: run.info.run_id for run in runs}
    png = Path(client.download_artifacts(sweep, "sweep.png", str(tmp_path_factory.mktemp("sweep-png"))))
    texts = [json.loads(line)["text"] for line in (root / "golden" / "demo" / "queries.jsonl").open()]
    return Store(uri, experiment.experiment_id, ids, png.read_bytes(), texts)


@pytest.fixture(scope="module")
def ui(store, tmp_path_factory) -> str:
    root = tmp_path_factory.mktemp("mlflow-ui")
    with mlflow_ui(store.uri, root / "artifacts", root / "mlflow-ui.log") as url:
        yield url


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    chosen = os.environ.get("CORTEX_TEST_ARTIFACTS")
    path = Path(chosen).resolve() if chosen else tmp_path_factory.mktemp("screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    """Chromium first: a machine without it fails before the store is built."""
    with chromium(tmp_path_factory.mktemp("chromium") / "chromedriver.log") as drv:
        yield drv


@pytest.fixture(scope="module")
def browser(driver, ui, shots) -> Page:
    return Page(driver, ui, shots)


@pytest.fixture
def page(browser, request):
    """The browser of a new user; the page as it was when the test failed, in `FAILED-<test>.png`."""
    failed = request.session.testsfailed
    browser.new_user()
    yield browser
    if request.session.testsfailed > failed:
        browser.shot(f"FAILED-{request.node.name}")


# --- what the user does and sees -------------------------------------------------------------


def run_names(page: Page) -> list[str]:
    """The runs table's names, top to bottom (the grid's rows carry their index)."""
    return page.driver.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0]))"
        ".map(a => [Number(a.closest('[row-index]').getAttribute('row-index')), a.textContent.trim()])"
        ".sort((x, y) => x[0] - y[0]).map(x => x[1]);",
        RUN_NAMES,
    )


def columns(page: Page) -> set[str]:
    """The runs table's columns on screen (the grid draws only those)."""
    cells = "return Array.from(document.querySelectorAll('.ag-header-cell[col-id]'))"
    return set(page.driver.execute_script(cells + ".map(e => e.getAttribute('col-id'));"))


def table_shows(page: Page, names: list[str], what: str) -> None:
    seen: list[list[str]] = [[]]

    def shown() -> bool:
        seen.append(run_names(page))
        return seen[-1] == names

    page.wait(shown, lambda: f"the runs table of {what} to list {names}; it listed {seen[-1]}")


def model_training_pages(page: Page) -> bool:
    """The UI shows its "Model training" pages (Runs, Models, Model registry in the sidebar), not
    the GenAI ones (Overview, Traces, Sessions, Judges, ...)."""
    aside = "//aside"
    return bool(page.visible(f"{aside}//*[normalize-space(text())='Model registry']")) and not page.visible(
        f"{aside}//*[normalize-space(text())='Sessions']"
    )


def open_experiment(page: Page, store: Store) -> None:
    """As the README says: on the home page choose "Model training" once, then the experiment."""
    page.click(page.text_element("Model training", within="//aside"))
    page.click(page.link("cortex_exp"))
    runs = f"#/experiments/{store.experiment_id}/runs"
    page.wait(lambda: runs in page.driver.current_url, f"the experiment to open on {runs}")


def expand(page: Page, run_id: str) -> None:
    """Unfold a parent run in the runs table (the button beside its name)."""
    cell = f"//div[@col-id='attributes.`Run Name`'][.//a[contains(@href, '/runs/{run_id}')]]"
    page.click(page.element(f"{cell}//button", f"the unfold button of run {run_id}"))


def follow(page: Page, link) -> None:
    """Click a link of a description: the UI opens those in a new tab; go on in it."""
    before = set(page.driver.window_handles)
    page.click(link)
    new = page.wait(lambda: set(page.driver.window_handles) - before, "the link's new tab")
    page.driver.switch_to.window(new.pop())


def png_size(png: bytes) -> tuple[int, int]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


# --- the tests --------------------------------------------------------------------------------


def test_the_experiment_opens_on_its_runs_and_the_sweep_jobs_have_names_of_their_own(page, store):
    # newest first: the comparison, the sweep, the rows; the jobs folded under their parents
    top = [COMPARISON, SWEEP, ROWS]
    page.open(f"#/experiments/{store.experiment_id}/runs?workflowType=machine_learning")  # the README's link
    table_shows(page, top, "the experiment, by the README's link")
    assert model_training_pages(page)
    page.new_user()
    open_experiment(page, store)  # the README's other way: the sidebar's switch, then the experiment
    assert model_training_pages(page)
    table_shows(page, top, "the experiment")
    expand(page, store.ids[SWEEP])
    table_shows(page, [COMPARISON, SWEEP, *JOBS[SWEEP][::-1], ROWS], "the experiment, the sweep unfolded")
    expand(page, store.ids[ROWS])
    shown = run_names(page)
    assert Counter(shown).most_common(1)[0][1] == 1, shown  # no two runs share a name
    assert set(shown) == {COMPARISON, SWEEP, ROWS, *JOBS[SWEEP], *JOBS[ROWS]}
    page.shot("runs")


def test_the_views_open_from_the_description_whichever_pages_the_ui_shows(page, store):
    """A new user who did not pick "Model training" lands on MLflow's GenAI pages (the experiment
    kind does not steer MLflow 3.17's UI); the description's links still lead to the runs."""
    page.click(page.link("cortex_exp"))
    page.wait(lambda: f"#/experiments/{store.experiment_id}/" in page.driver.current_url, "the experiment")
    benchmark = sorted(JOBS[ROWS] + JOBS[SWEEP])  # every job on a row of its own, by name
    for view, names in (
        ("cortex_exp: benchmark runs", benchmark),
        ("cortex_exp: runs that decide", [n for n in benchmark if n.startswith("core/")]),
        ("cortex_exp: comparisons", [COMPARISON]),
    ):
        page.click(page.element(f"//button[@data-component-id='{UNFOLD}']", "the unfold button of the description"))
        follow(page, page.link(view))
        page.wait(lambda: "viewStateShareKey=" in page.driver.current_url, f"the view {view!r}")
        page.element(f"//button[normalize-space(.)={literal(view)}]", f"the views menu naming {view!r}")
        table_shows(page, names, view)
        assert model_training_pages(page), f"{view!r} opened on the GenAI pages"
        if view == "cortex_exp: benchmark runs":  # every column the README promises, on screen
            page.wait(lambda: VIEW_COLUMNS <= columns(page), lambda: f"the columns {VIEW_COLUMNS - columns(page)}")
            page.shot("benchmark-runs")


def test_the_comparison_is_one_click_from_a_compared_run(page, store):
    open_experiment(page, store)
    expand(page, store.ids[ROWS])
    page.click(page.link("core/bm25_v2"))
    comparison = store.ids[COMPARISON]
    page.wait(lambda: f"/runs/{store.ids['core/bm25_v2']}" in page.driver.current_url, "the run page of core/bm25_v2")
    page.text_element(f"compared_in.{comparison}")  # the compared run's tag
    for more in page.visible("//*[normalize-space(text())='Show more']"):
        page.click(more)  # the description, whole
    link = page.link(COMPARISON)
    assert link.get_attribute("href").endswith(f"/runs/{comparison}?workflowType=machine_learning")
    follow(page, link)
    page.wait(lambda: f"/runs/{comparison}" in page.driver.current_url, "the comparison run's page")
    page.text_element(COMPARISON)  # its name heads the page
    page.text_element("comparison_decides")
    page.text_element("verdict.recall_at_24")
    # and back: its description links both runs
    for name in ("core/bm25_v2", "core/hybrid w=0.5"):
        assert f"/runs/{store.ids[name]}?" in page.link(name).get_attribute("href")
    assert model_training_pages(page)
    page.shot("comparison")


def test_the_sweep_plot_renders(page, store):
    open_experiment(page, store)
    page.click(page.link(SWEEP))
    page.wait(lambda: f"/runs/{store.ids[SWEEP]}" in page.driver.current_url, "the sweep's run page")
    page.click(page.text_element("Artifacts"))
    page.click(page.text_element("sweep.png"))
    decoded = page.wait(
        lambda: next(
            (
                page.driver.execute_script("return [arguments[0].naturalWidth, arguments[0].naturalHeight];", img)
                for img in page.visible("//img[starts-with(@src, 'blob:')]")
                if page.driver.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0;", img)
            ),
            None,
        ),
        "sweep.png shown as a decoded image",
    )
    assert tuple(decoded) == png_size(store.sweep_png)  # the plot the multirun logged, whole
    page.shot("sweep-png")


def test_decides_and_degraded_are_on_the_first_screen_of_the_benchmark_runs_at_1440_px(page, store):
    """Before: the view listed row, retriever, weight, then decides and degraded — off-screen at 1900 px."""
    page.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", SCREEN_1440)
    try:
        page.open(
            f"#/experiments/{store.experiment_id}/runs?viewStateShareKey=cortex-benchmark&workflowType=machine_learning"
        )
        table_shows(page, sorted(JOBS[ROWS] + JOBS[SWEEP]), "the view of benchmark runs at 1440 px")
        first = {"tags.`decides`", "tags.`degraded`"}
        page.wait(lambda: first <= on_screen(page), lambda: f"{first} on the first screen; it shows {on_screen(page)}")
        page.text_element("decides", within="//div[contains(@class, 'ag-header')]")
        page.shot("benchmark-runs-1440")
    finally:
        page.driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def on_screen(page: Page) -> set[str]:
    """The columns whose header lies whole inside the window, without scrolling."""
    return set(
        page.driver.execute_script(
            "return Array.from(document.querySelectorAll('.ag-header-cell[col-id]'))"
            ".filter(e => { const r = e.getBoundingClientRect();"
            " return r.width > 0 && r.left >= 0 && r.right <= window.innerWidth && r.bottom <= window.innerHeight; })"
            ".map(e => e.getAttribute('col-id'));"
        )
    )


def test_the_per_query_table_shows_each_query_s_text(page, store):
    run_id = store.ids["core/bm25_v2"]
    page.open(f"#/experiments/{store.experiment_id}/runs/{run_id}/artifacts?workflowType=machine_learning")
    page.click(page.text_element("per_query_table.json"))
    for text in store.queries[:3]:  # the first rows of the table, as the UI draws them
        page.text_element(text)
    for column in ("query", "ndcg_at_10", "serve_ids"):
        page.text_element(column)
    page.shot("per-query-table")
