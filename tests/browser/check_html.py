#!/usr/bin/env python3
"""Loads simbench HTML reports in headless Chromium and checks what it rendered.

Usage: check_html.py CHROMIUM OUT_DIR (REPORT.html REPORT.json)...

Chromium is driven over the DevTools protocol on a pipe (--remote-debugging-pipe: JSON
messages ending in NUL on fds 3 and 4), so nothing listens on a port. The network is off three
ways: the DevTools "offline" condition, a resolver that resolves nothing and a dead proxy; and
every request the page starts is recorded, so a fetch of anything but the file itself fails the
check. For each page it asserts:

- no console error, no uncaught exception, no error log entry, no request off the file;
- every metric panel (figure.metric) plots exactly as many seed dots (circle.pt) as the JSON
  report has runs defining that metric, and the jobs_done panel seeds × strategies, each dot
  drawn inside its chart;
- every chart has a title, axis labels and a non-empty size; every strategy has a timeline whose
  lines carry points;

and saves screenshots: the page's top as OUT_DIR/<report name>.png, the metric panels and the
first timeline as <report name>-panels.png and -timeline.png. Exits 1 with the reasons
on any failure. Only the Python standard library is used.
"""

import base64
import json
import os
import subprocess
import sys
import tempfile
import time

TIMEOUT_S = 60


class Browser:
    """A headless Chromium and one page of it, spoken to over the DevTools pipe."""

    def __init__(self, chromium, profile):
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def wire():
            os.dup2(to_child_r, 3)
            os.dup2(from_child_w, 4)

        args = [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--proxy-server=http://127.0.0.1:9",
            "--remote-debugging-pipe",
            "--user-data-dir=" + profile,
            "about:blank",
        ]
        self.proc = subprocess.Popen(
            args,
            preexec_fn=wire,
            pass_fds=(3, 4),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._buffer = b""
        self._next_id = 0
        self.events = []
        self.session = None

    def _read_message(self, deadline):
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("no answer from chromium")
            chunk = os.read(self._from_child, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the pipe (exit %s)" % self.proc.poll())
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method, params=None, session=True):
        """Sends a command and returns its result, keeping the events that come first."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self._to_child, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError("%s: %s" % (method, reply["error"]))
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method):
        deadline = time.monotonic() + TIMEOUT_S
        for i, event in enumerate(self.events):
            if event.get("method") == method:
                return self.events.pop(i)
        while True:
            event = self._read_message(deadline)
            if event.get("method") == method:
                return event
            self.events.append(event)

    def open_page(self):
        target = self.call("Target.createTarget", {"url": "about:blank"}, session=False)
        attached = self.call(
            "Target.attachToTarget",
            {"targetId": target["targetId"], "flatten": True},
            session=False,
        )
        self.session = attached["sessionId"]
        for domain in ("Runtime", "Log", "Network", "Page"):
            self.call(domain + ".enable")
        self.call(
            "Network.emulateNetworkConditions",
            {"offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1},
        )
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False},
        )

    def close(self):
        try:
            self.call("Browser.close", session=False)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


MEASURE = r"""
(() => {
  const inside = (el, box) => {
    const b = el.getBoundingClientRect();
    return b.width > 0 && b.left >= box.left - 1 && b.right <= box.right + 1
      && b.top >= box.top - 1 && b.bottom <= box.bottom + 1;
  };
  const charts = [...document.querySelectorAll('figure > svg')].map(svg => {
    const b = svg.getBoundingClientRect();
    const title = svg.querySelector('text.title');
    return {
      title: title ? title.textContent : '',
      x_label: (svg.querySelector('text.axis-x') || {}).textContent || '',
      width: b.width, height: b.height,
    };
  });
  const metrics = [...document.querySelectorAll('figure.metric')].map(f => {
    const svg = f.querySelector('svg');
    const box = svg.getBoundingClientRect();
    const pts = [...f.querySelectorAll('circle.pt')];
    return {
      metric: f.dataset.metric,
      points: pts.length,
      inside: pts.filter(p => inside(p, box)).length,
    };
  });
  const timelines = [...document.querySelectorAll('section.timeline')].map(s => ({
    algorithm: s.dataset.algorithm,
    lines: s.querySelectorAll('polyline.series').length,
    vertices: [...s.querySelectorAll('polyline.series')]
      .reduce((n, l) => n + l.points.numberOfItems, 0),
  }));
  const box = el => {
    if (!el) return null;
    const b = el.getBoundingClientRect();
    return {y: b.top + window.scrollY, height: b.height};
  };
  const regions = {
    panels: box(document.querySelector('figure.metric')?.closest('section')),
    timeline: box(document.querySelector('section.timeline')),
  };
  return JSON.stringify({
    charts, metrics, timelines, regions,
    verdict: (document.querySelector('.verdict') || {}).textContent || '',
    height: document.documentElement.scrollHeight,
    scripts: document.scripts.length,
  });
})()
"""


def expected_points(report):
    """Per metric: the runs of the JSON report that define it."""
    counts = {}
    for run in report["runs"]:
        for name, value in (run.get("metrics") or {}).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                counts[name] = counts.get(name, 0) + 1
    return counts


def screenshot(browser, path, y, height):
    """Saves the page's band [y, y + height) at 1280 px wide as a PNG."""
    shot = browser.call(
        "Page.captureScreenshot",
        {
            "format": "png",
            "captureBeyondViewport": True,
            "clip": {"x": 0, "y": y, "width": 1280, "height": height, "scale": 1},
        },
    )
    with open(path, "wb") as f:
        f.write(base64.b64decode(shot["data"]))


def check_page(browser, html, report, out_dir):
    problems = []
    browser.events.clear()
    url = "file://" + os.path.abspath(html)
    browser.call("Page.navigate", {"url": url})
    browser.wait_for("Page.loadEventFired")
    result = browser.call("Runtime.evaluate", {"expression": MEASURE, "returnByValue": True})
    seen = json.loads(result["result"]["value"])
    name = os.path.splitext(os.path.basename(html))[0]

    for event in browser.events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            problems.append("console error: %s" % params.get("args"))
        elif method == "Runtime.exceptionThrown":
            problems.append("exception: %s" % params.get("exceptionDetails"))
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            problems.append("error logged: %s" % params["entry"].get("text"))
        elif method == "Network.requestWillBeSent":
            requested = params["request"]["url"]
            if requested != url and not requested.startswith(("data:", "about:")):
                problems.append("requested off the file: %s" % requested)

    strategies = list(dict.fromkeys(r["algorithm"] for r in report["runs"]))
    seeds = report["seeds"]
    expected = expected_points(report)
    panels = {m["metric"]: m for m in seen["metrics"]}
    if "jobs_done" not in panels:
        problems.append("no jobs_done panel")
    elif panels["jobs_done"]["points"] != len(seeds) * len(strategies):
        problems.append(
            "jobs_done panel plots %d dots, expected %d seeds × %d strategies"
            % (panels["jobs_done"]["points"], len(seeds), len(strategies))
        )
    for metric, panel in panels.items():
        if panel["points"] != expected.get(metric, 0):
            problems.append(
                "%s panel plots %d dots, the JSON has %d values"
                % (metric, panel["points"], expected.get(metric, 0))
            )
        if panel["inside"] != panel["points"]:
            problems.append(
                "%s panel: %d of %d dots drawn outside the chart"
                % (metric, panel["points"] - panel["inside"], panel["points"])
            )
    for chart in seen["charts"]:
        if not chart["title"] or not chart["x_label"] or chart["width"] < 100:
            problems.append("a chart without title, axis label or size: %s" % chart)
    timelines = {t["algorithm"]: t for t in seen["timelines"]}
    for strategy in strategies:
        line = timelines.get(strategy)
        if line is None or line["lines"] == 0 or line["vertices"] == 0:
            problems.append("no timeline with data for %s" % strategy)
    if "Verdict" not in seen["verdict"]:
        problems.append("no verdict")
    if seen["scripts"]:
        problems.append("the page has %d scripts" % seen["scripts"])

    png = os.path.join(out_dir, name + ".png")
    screenshot(browser, png, 0, min(seen["height"], 1400))
    for region, box in seen["regions"].items():
        if box:
            path = os.path.join(out_dir, "%s-%s.png" % (name, region))
            screenshot(browser, path, box["y"], min(box["height"], 1200))
    print(
        "%s: %d metric panels, %d dots, %d charts, %d timelines, screenshot %s"
        % (
            name,
            len(panels),
            sum(p["points"] for p in panels.values()),
            len(seen["charts"]),
            len(timelines),
            png,
        )
    )
    return ["%s: %s" % (name, p) for p in problems]


def main():
    if len(sys.argv) < 5 or len(sys.argv) % 2 == 0:
        print(__doc__, file=sys.stderr)
        return 2
    chromium, out_dir = sys.argv[1], sys.argv[2]
    pairs = list(zip(sys.argv[3::2], sys.argv[4::2]))
    problems = []
    with tempfile.TemporaryDirectory() as profile:
        browser = Browser(chromium, profile)
        try:
            browser.open_page()
            for html, report_path in pairs:
                with open(report_path) as f:
                    report = json.load(f)
                problems += check_page(browser, html, report, out_dir)
        finally:
            browser.close()
    for problem in problems:
        print("FAIL " + problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
