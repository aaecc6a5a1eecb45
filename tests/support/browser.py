"""A real browser for the slow tier: Debian's Chromium, headless, driven by selenium through
Debian's chromedriver (named explicitly, so Selenium Manager never looks for or downloads one).
A missing browser fails with what to install; nothing here skips. The browser, its driver and
its profile (a throw-away folder) are gone however the test ends."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.common.exceptions import ElementClickInterceptedException, TimeoutException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

from support.servers import tail

# Headless as root in a closed network: no sandbox (root), no GPU, and none of the background
# connections (component updates, sync, QUIC) that this network refuses many at a time.
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
]
WINDOW = (1920, 1080)
ASSISTANT_CLOSE = "mlflow.assistant.chat_panel.close"
WAIT_S = 45  # the UI is a React app loading on 2 shared cores: every step waits for what it needs


def installed() -> tuple[str, str]:
    """Chromium and chromedriver, from PATH (Debian: /usr/bin/chromium, /usr/bin/chromedriver)."""
    browser, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (browser and driver):
        missing = " and ".join(n for n, p in (("chromium", browser), ("chromedriver", driver)) if not p)
        pytest.fail(
            f"{missing} not found on PATH: `make test` installs Debian's packages "
            "(apt-get install chromium chromium-driver)"
        )
    return browser, driver


@contextmanager
def chromium(log: Path) -> Iterator[webdriver.Chrome]:
    """A headless Chromium with a fresh profile; chromedriver logs to `log`."""
    browser, driver = installed()
    profile = Path(tempfile.mkdtemp(prefix="cortex-chromium-"))
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in [*FLAGS, f"--user-data-dir={profile}", "--window-size={},{}".format(*WINDOW)]:
        options.add_argument(flag)
    # a session of its own: whatever the driver started goes with its process group at the end
    service = Service(executable_path=driver, log_output=str(log), popen_kw={"start_new_session": True})
    try:
        try:
            drv = webdriver.Chrome(service=service, options=options)
        except WebDriverException as e:
            pytest.fail(
                f"Chromium did not start ({browser}, {driver}): {e.msg}\nchromedriver's log {log}:\n{tail(log)}"
            )
        try:
            yield drv
        finally:
            drv.quit()
    finally:
        process = getattr(service, "process", None)
        if process is not None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass  # the group is empty: nothing left
        shutil.rmtree(profile, ignore_errors=True)


def literal(text: str) -> str:
    """`text` as an XPath string literal (XPath 1.0 has no escapes: quotes are concatenated)."""
    if "'" not in text:
        return f"'{text}'"
    return "concat(" + ', "\'", '.join(f"'{part}'" for part in text.split("'")) + ")"


class Page:
    """The MLflow UI at `base`, as a user sees it; `shots` is where screenshots go."""

    def __init__(self, driver: webdriver.Chrome, base: str, shots: Path):
        self.driver, self.base, self.shots = driver, base, shots

    def open(self, fragment: str = "") -> None:
        self.driver.get(f"{self.base}/{fragment}")

    def new_user(self) -> None:
        """A browser that has never opened this UI (no local or session storage, one tab), on the
        home page, where it closes the assistant panel MLflow opens on a first visit (it takes a
        third of the width; closed, it stays closed)."""
        for handle in self.driver.window_handles[1:]:
            self.driver.switch_to.window(handle)
            self.driver.close()
        self.driver.switch_to.window(self.driver.window_handles[0])
        self.open()
        self.driver.execute_script("window.localStorage.clear(); window.sessionStorage.clear();")
        self.driver.refresh()
        self.click(self.element(f"//button[@data-component-id='{ASSISTANT_CLOSE}']", "the assistant panel"))

    def wait(self, ready: Callable[[], object], what: str | Callable[[], str], timeout_s: float = WAIT_S):
        """What `ready` returns once it is truthy; a failure names what was awaited (`what`, or
        what it returns then) and where."""

        def check(_):
            try:
                return ready()
            except WebDriverException:
                return False  # the React app re-rendered the element away: ask again

        try:
            return WebDriverWait(self.driver, timeout_s, poll_frequency=0.25).until(check)
        except TimeoutException:
            what = what() if callable(what) else what
            raise AssertionError(
                f"waited {timeout_s:.0f} s for {what}; the page is {self.driver.current_url}"
            ) from None

    def visible(self, xpath: str) -> list[WebElement]:
        return [e for e in self.driver.find_elements(By.XPATH, xpath) if e.is_displayed()]

    def element(self, xpath: str, what: str) -> WebElement:
        return self.wait(lambda: next(iter(self.visible(xpath)), None), what)

    def text_element(self, text: str, within: str = "") -> WebElement:
        """The visible element whose own text is `text`."""
        return self.element(f"{within}//*[normalize-space(text())={literal(text)}]", repr(text))

    def click(self, element: WebElement) -> None:
        """Click as a user would: scrolled into view, past a first-visit tip that covers the page
        (MLflow's "Got it" popovers), once the React app lets it through."""

        def clicked() -> bool:
            self.dismiss_tips()  # one shown now would take the click (a tip over a dimmed page need not refuse it)
            self.driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", element)
            try:
                element.click()
                return True
            except ElementClickInterceptedException:
                self.dismiss_tips()
                return False

        self.wait(clicked, f"a click on <{element.tag_name}> {element.text[:60]!r}")

    def dismiss_tips(self) -> None:
        """MLflow's first-visit tips ("Got it" popovers, e.g. "Detect Issues in Your Traces")."""
        for tip in self.visible("//button[normalize-space(.)='Got it']"):
            tip.click()

    def link(self, text: str) -> WebElement:
        return self.element(f"//a[normalize-space(.)={literal(text)}]", f"a link {text!r}")

    def body(self) -> str:
        return self.driver.find_element(By.TAG_NAME, "body").text

    def shot(self, name: str) -> Path:
        path = self.shots / f"{name}.png"
        self.driver.save_screenshot(str(path))
        return path
