"""A real headless browser (the system's chromium through Selenium) and a
reader of the terminal it shows.

xterm.js draws the terminal on a canvas, so the page has no text to read.
The reader takes what the browser itself received on the console's
WebSocket (chromium's performance log, nothing injected into the page) and
replays it through a VT100 emulator (pyte) at the size the page asked for:
the text an operator sees, row by row."""

from __future__ import annotations

import base64
import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyte
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

from tests.support.waiting import until

CHROMIUM = ("/usr/bin/chromium", "chromium", "chromium-browser")
CHROMEDRIVER = ("/usr/bin/chromedriver", "chromedriver")


def _find(names: tuple[str, ...]) -> str | None:
    for name in names:
        found = shutil.which(name) if "/" not in name else (name if Path(name).exists() else None)
        if found:
            return found
    return None


def browser_paths() -> tuple[str, str] | None:
    chromium, driver = _find(CHROMIUM), _find(CHROMEDRIVER)
    return (chromium, driver) if chromium and driver else None


def start_browser(chromium: str, driver: str, *, width: int = 1280, height: int = 800) -> webdriver.Chrome:
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in (
        "--headless=new",
        "--no-sandbox",  # root in a container
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--window-size={width},{height}",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    return webdriver.Chrome(service=Service(driver), options=options)


def wait_for(predicate: Callable[[], Any], *, timeout: float = 60, every: float = 0.2, what: str = "condition") -> Any:
    """tests/support/waiting.py's `until`, in this folder's keyword spelling."""
    return until(predicate, what, timeout=timeout, every=every)


class Terminal:
    """What the page's terminal shows, rebuilt from the WebSocket frames the
    browser received. One per page load."""

    def __init__(self, driver: webdriver.Chrome) -> None:
        self.driver = driver
        self.screen = pyte.Screen(80, 24)
        self.stream = pyte.ByteStream(self.screen)
        self.sent: list[str] = []
        """Text frames the page sent (keys, resizes)."""
        self.closed = False

    def _pump(self) -> None:
        for entry in self.driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            method, params = message.get("method"), message.get("params", {})
            if method == "Network.webSocketCreated":
                self._size_from_url(params.get("url", ""))
            elif method == "Network.webSocketFrameReceived":
                frame = params["response"]
                if frame.get("opcode") == 2:
                    self.stream.feed(base64.b64decode(frame["payloadData"]))
            elif method == "Network.webSocketFrameSent":
                payload = params["response"].get("payloadData", "")
                self.sent.append(payload)
                try:
                    kind, data = json.loads(payload)[:2]
                except (ValueError, TypeError):
                    continue
                if kind == "resize":
                    self.screen.resize(data["height"], data["width"])
            elif method == "Network.webSocketClosed":
                self.closed = True

    def _size_from_url(self, url: str) -> None:
        from urllib.parse import parse_qs, urlsplit

        q = parse_qs(urlsplit(url).query)
        if "width" in q and "height" in q:
            self.screen.resize(int(q["height"][0]), int(q["width"][0]))

    def text(self) -> str:
        self._pump()
        return "\n".join(line.rstrip() for line in self.screen.display)

    def wait_text(self, needle: str, *, timeout: float = 60) -> str:
        return wait_for(lambda: needle in (t := self.text()) and t, timeout=timeout, what=f"{needle!r} on the page")

    def type(self, *keys: str) -> None:
        """Keys as the operator types them, into xterm's input element."""
        box = self.driver.find_element(By.CSS_SELECTOR, ".xterm-helper-textarea")
        self.driver.execute_script("arguments[0].focus()", box)
        for k in keys:
            box.send_keys(k)
            time.sleep(0.05)  # sleep: xterm drops keys typed faster than its input handler reads them
