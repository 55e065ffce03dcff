#!/usr/bin/env python3
"""Browser scenarios for Larder's viewer, run by ViewerBrowserTests.swift.

    python3 viewer_scenarios.py --base-url http://127.0.0.1:PORT --group plain \
        [--page] [--token T] [--screenshots DIR] [--only NAME ...]

The Swift suite starts the server, seeds it over HTTP with seed.json (beside
this file) and runs one group of scenarios against it. The group shares one
headless Chromium (`Browser`), put back to a fresh state between scenarios
(storage, cache, cookies, emulated media, injected scripts, the console log
all cleared) and replaced after a scenario that failed; starting Chromium for
each scenario was most of this script's CPU. Each scenario prints one JSON
line: {"scenario", "ok", "error", "seconds"}; the exit status is 0 when every
one passed.

Adding a scenario: write a function taking a Context, decorate it with
@scenario(group=...), and it runs with its group. Scenarios that depend on
the new viewer page (the data-testid hooks below) also say page=True: they
are listed in PAGE_SCENARIOS and run only with --page, which the Swift suite
passes when Public/app.js exists.
"""
import argparse
import http.client
import json
import os
import shutil
import sys
import time
import traceback
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = json.load(open(os.path.join(HERE, "seed.json"), encoding="utf-8"))

SCENARIOS = {}        # name -> (group, function), every scenario
PAGE_SCENARIOS = []   # names of those that need the new page's data-testid hooks


def scenario(group="plain", page=False):
    def register(function):
        SCENARIOS[function.__name__] = (group, function)
        if page:
            PAGE_SCENARIOS.append(function.__name__)
        return function
    return register


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


# How long a scenario waits for the page or the server before it fails. On a
# quiet machine every wait ends in well under a second; in a full CI run the
# browser shares two cores with the whole test suite, and a 10 s bound failed
# there once. Waiting longer costs nothing when the page is right.
PATIENCE = float(os.environ.get("VIEWER_PATIENCE_SECONDS", "30"))


def wait_until(what, condition, timeout=PATIENCE, interval=0.1):
    """condition()'s first truthy value within timeout seconds, else a Failure naming what."""
    deadline = time.monotonic() + timeout
    last_error = None
    while True:
        try:
            value = condition()
            if value:
                return value
        except Exception as error:  # a stale or not-yet-present element: try again
            last_error = error
        if time.monotonic() > deadline:
            raise Failure(f"timed out waiting for {what}" + (f" ({last_error})" if last_error else ""))
        time.sleep(interval)


class Browser:
    """The group's one Chromium, started on first use. `reset()` between
    scenarios leaves it as a new one would be for the server's origin, or
    quits it when that fails, so the next scenario starts a new one."""

    def __init__(self, origin):
        self.origin = origin
        self._driver = None
        self.injected = []  # Page.addScriptToEvaluateOnNewDocument identifiers

    @property
    def started(self):
        return self._driver is not None

    @property
    def driver(self):
        if self._driver is None:
            self._driver = start_browser()
            self.injected = []
        return self._driver

    def inject(self, source):
        """Runs `source` in every document loaded from now until the reset."""
        added = self.driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": source})
        self.injected.append(added["identifier"])

    def reset(self):
        if self._driver is None:
            return
        driver = self._driver
        try:
            for handle in driver.window_handles[1:]:
                driver.switch_to.window(handle)
                driver.close()
            driver.switch_to.window(driver.window_handles[0])
            # Off the page first: its long polls and timers end with it.
            driver.get("about:blank")
            for identifier in self.injected:
                driver.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", {"identifier": identifier})
            self.injected = []
            driver.execute_cdp_cmd("Storage.clearDataForOrigin", {"origin": self.origin, "storageTypes": "all"})
            driver.execute_cdp_cmd("Network.clearBrowserCache", {})
            driver.execute_cdp_cmd("Network.clearBrowserCookies", {})
            driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "", "features": []})
            driver.get_log("browser")  # reading the log empties it
        except Exception:
            self.quit()

    def quit(self):
        if self._driver is not None:
            try:
                self._driver.quit()
            except Exception:
                pass
            self._driver = None


class Context:
    """One scenario's server, HTTP helpers and the group's browser."""

    def __init__(self, base_url, token, screenshots, browser):
        self.base_url = base_url.rstrip("/")
        parsed = urllib.parse.urlparse(self.base_url)
        self.host, self.port = parsed.hostname, parsed.port
        self.token = token
        self.screenshots = screenshots
        self.browser = browser

    # --- HTTP, as another client would --------------------------------------

    def http(self, method, target, body=None, headers=None):
        """(status, headers as a lowercase dict, body bytes); target is sent as written."""
        connection = http.client.HTTPConnection(self.host, self.port, timeout=PATIENCE)
        all_headers = dict(headers or {})
        if self.token and "Authorization" not in all_headers:
            all_headers["Authorization"] = "Bearer " + self.token
        if isinstance(body, str):
            body = body.encode("utf-8")
        try:
            connection.putrequest(method, target, skip_host=False, skip_accept_encoding=True)
            for name, value in all_headers.items():
                connection.putheader(name, value)
            connection.putheader("Content-Length", str(len(body or b"")))
            connection.endheaders(body)
            response = connection.getresponse()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
        finally:
            connection.close()

    @staticmethod
    def store_path(key):
        return "/store/" + urllib.parse.quote(key, safe="/-._~")

    def put(self, key, value, content_type="application/json", headers=None):
        return self.http("PUT", self.store_path(key), value, {"Content-Type": content_type, **(headers or {})})

    def get(self, key):
        return self.http("GET", self.store_path(key))

    # --- the browser --------------------------------------------------------

    @property
    def driver(self):
        return self.browser.driver

    def open(self, path="/"):
        self.driver.get(self.base_url + path)
        wait_until("the page to load", lambda: self.driver.execute_script("return document.readyState") == "complete")

    def console_errors(self, allowed=()):
        """SEVERE browser log entries since the last call (reading the log
        empties it), but the favicon.ico the browser asks for on its own and
        messages containing any of `allowed`."""
        entries = self.driver.get_log("browser")
        return [e for e in entries if e.get("level") == "SEVERE" and "favicon.ico" not in e.get("message", "")
                and not any(text in e.get("message", "") for text in allowed)]

    def expect_no_console_errors(self, allowed=()):
        errors = self.console_errors(allowed)
        check(not errors, "console errors: " + json.dumps(errors))

    def color_scheme(self, scheme):
        """Emulates prefers-color-scheme (light or dark) for the page."""
        self.driver.execute_cdp_cmd("Emulation.setEmulatedMedia",
                                    {"media": "", "features": [{"name": "prefers-color-scheme", "value": scheme}]})

    def screenshot(self, name):
        if not self.screenshots:
            return None
        os.makedirs(self.screenshots, exist_ok=True)
        path = os.path.join(self.screenshots, name + ".png")
        check(self.driver.save_screenshot(path), f"could not save {path}")
        return path

    # --- the new page's hooks (data-testid) ---------------------------------

    def find(self, testid, within=None):
        from selenium.webdriver.common.by import By
        return (within or self.driver).find_elements(By.CSS_SELECTOR, f'[data-testid="{testid}"]')

    def one(self, testid, timeout=PATIENCE):
        """The first visible element with data-testid=testid, waiting for it."""
        return wait_until(f'[data-testid="{testid}"]',
                          lambda: next((e for e in self.find(testid) if e.is_displayed()), None), timeout)

    def shown(self, testid):
        """Whether an element with data-testid=testid is displayed now. An
        element the page replaced while we looked (stale) counts as not shown."""
        from selenium.common.exceptions import StaleElementReferenceException
        try:
            return any(e.is_displayed() for e in self.find(testid))
        except StaleElementReferenceException:
            return False

    def tree_item(self, key):
        from selenium.webdriver.common.by import By
        selector = '[data-testid="tree-item"][data-key="%s"]' % key.replace("\\", "\\\\").replace('"', '\\"')
        found = self.driver.find_elements(By.CSS_SELECTOR, selector)
        return next((e for e in found if e.is_displayed()), None)

    def tree_folder(self, prefix):
        """The folder row for `prefix` (`users/`), if shown."""
        from selenium.webdriver.common.by import By
        selector = '[data-testid="tree-folder"][data-prefix="%s"]' % prefix.replace("\\", "\\\\").replace('"', '\\"')
        found = self.driver.find_elements(By.CSS_SELECTOR, selector)
        return next((e for e in found if e.is_displayed()), None)

    def open_key(self, key):
        """Opens the folders down to key (a closed one is clicked by its
        name) and then the key, and waits for its value view."""
        from selenium.webdriver.common.by import By
        self.one("tree")
        parts = key.split("/")
        for depth in range(1, len(parts)):
            if self.tree_item(key):
                break
            prefix = "/".join(parts[:depth]) + "/"
            folder = wait_until(f"the folder {prefix} in the tree", lambda: self.tree_folder(prefix))
            if folder.get_attribute("aria-expanded") != "true":
                folder.find_element(By.CSS_SELECTOR, ".row .name").click()
        wait_until(f"{key} in the tree", lambda: self.tree_item(key)).click()
        return self.one("value-view")

    def editor_text(self):
        editor = self.one("editor")
        return editor.get_attribute("value") if editor.tag_name in ("textarea", "input") else editor.text

    def set_editor_text(self, text):
        """Replaces the editor's text (a textarea or a contenteditable),
        opening the editor first (the Edit button) when it is closed."""
        if not self.shown("editor"):
            self.one("edit").click()
        editor = self.one("editor")
        if editor.tag_name in ("textarea", "input"):
            self.driver.execute_script(
                "arguments[0].value = arguments[1];"
                "arguments[0].dispatchEvent(new Event('input', {bubbles: true}));", editor, text)
        else:
            self.driver.execute_script(
                "arguments[0].textContent = arguments[1];"
                "arguments[0].dispatchEvent(new Event('input', {bubbles: true}));", editor, text)

    def no_script_ran(self):
        check(self.driver.execute_script("return window.__xss === undefined"),
              "a stored value ran as script (window.__xss = %r)" % self.driver.execute_script("return window.__xss"))


def start_browser():
    """Headless Debian Chromium through chromedriver, with the browser log on."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    check(chromium and driver_path,
          "chromium or chromedriver is missing: apt-get install chromium chromium-driver (bash .ci/run installs them)")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1280,900", "--no-first-run", "--disable-extensions"):
        options.add_argument(argument)
    # The console, for get_log('browser'): every level.
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(executable_path=driver_path), options=options)


# === Scenarios that hold for any viewer page ==================================

@scenario()
def page_loads_without_console_errors(ctx):
    ctx.open("/")
    check("Larder" in ctx.driver.title, f"the title is {ctx.driver.title!r}")
    # Let the page's first fetches (the key listing) finish and log.
    time.sleep(1.0)
    ctx.expect_no_console_errors()


@scenario()
def screenshots_light_and_dark(ctx):
    for scheme in ("light", "dark"):
        ctx.color_scheme(scheme)
        ctx.open("/")
        check(ctx.driver.execute_script(f"return matchMedia('(prefers-color-scheme: {scheme})').matches"),
              f"prefers-color-scheme: {scheme} is not emulated")
        time.sleep(0.5)
        ctx.screenshot(f"viewer-{scheme}")
        # The main view too: a JSON value open (by its shareable address).
        ctx.open("/#/key/config/app.json")
        wait_until("config/app.json open", lambda: ctx.find("json-tree") and ctx.one("json-tree").is_displayed())
        time.sleep(0.3)
        ctx.screenshot(f"viewer-json-{scheme}")
    ctx.expect_no_console_errors()


@scenario()
def etag_revalidates_with_304(ctx):
    status, headers, body = ctx.http("GET", "/")
    check(status == 200 and b"<title>" in body, f"GET / answered {status}")
    tag = headers.get("etag")
    check(tag and tag.startswith('"'), f"no strong ETag: {tag!r}")
    check(headers.get("cache-control") == "no-cache", f"Cache-Control is {headers.get('cache-control')!r}")
    status, headers, body = ctx.http("GET", "/viewer/", headers={"If-None-Match": tag})
    check(status == 304 and body == b"", f"revalidation answered {status} with {len(body)} bytes")
    check(headers.get("etag") == tag, "the 304 has another ETag")


@scenario()
def traversal_is_404(ctx):
    for target in ("/viewer/../Package.swift", "/viewer/%2e%2e/Package.swift", "/viewer/..%2f..%2fetc/passwd",
                   "/viewer/..\\Package.swift", "/viewer/.git/config", "/viewer/%5c..%5cPackage.swift"):
        status, _, _ = ctx.http("GET", target)
        check(status == 404, f"{target} answered {status}")


@scenario(group="standalone")
def copied_binary_serves_the_viewer(ctx):
    status, headers, body = ctx.http("GET", "/")
    check(status == 200 and headers.get("content-type", "").startswith("text/html"), f"GET / answered {status}")
    ctx.open("/")
    check("Larder" in ctx.driver.title, f"the title is {ctx.driver.title!r}")
    time.sleep(0.5)
    ctx.expect_no_console_errors()
    ctx.screenshot("viewer-standalone")


# === Scenarios of the new page (data-testid hooks); run with --page ============

def seeded(key):
    return next(entry for entry in SEED if entry["key"] == key)


@scenario(page=True)
def browse_seeded_tree(ctx):
    ctx.open("/")
    ctx.one("tree")
    for entry in SEED:
        ctx.open_key(entry["key"])
    ctx.expect_no_console_errors()


@scenario(page=True)
def open_json_shows_a_tree(ctx):
    ctx.open("/")
    ctx.open_key("config/app.json")
    tree = ctx.one("json-tree")
    for text in ("features", "viewer", "list"):
        wait_until(f"{text!r} in the JSON tree", lambda: text in tree.text)
    ctx.screenshot("viewer-json")


@scenario(page=True)
def edit_and_save_uses_if_match(ctx):
    key = "users/alice.json"
    ctx.open("/")
    ctx.open_key(key)
    ctx.set_editor_text('{"name":"Alice","age":32}')
    ctx.one("save").click()
    wait_until("the saved value on the server", lambda: json.loads(ctx.get(key)[2] or b"null") == {"name": "Alice", "age": 32})
    # After a save the page closes the editor and reloads the key; the Edit button
    # shows again once the new text is in. Edit again only then, as a person would:
    # an editor found before the reload is replaced under the test (stale).
    wait_until("the reloaded value after the save",
               lambda: not ctx.shown("editor") and ctx.shown("edit"))
    # A second save from the same page must carry the new ETag, not the old one (no false 412).
    ctx.set_editor_text('{"name":"Alice","age":33}')
    ctx.one("save").click()
    wait_until("the second save on the server", lambda: json.loads(ctx.get(key)[2] or b"null") == {"name": "Alice", "age": 33})
    check(not ctx.shown("conflict-dialog"),
          "a conflict dialog after saving twice from one page")


def edit_behind_another_client(ctx, key):
    """Opens key and starts editing it, lets another client change it, then
    saves: a 412. (Before editing starts, the page follows the change live.)"""
    ctx.open("/")
    ctx.open_key(key)
    ctx.one("edit").click()
    ctx.one("editor")
    status, _, _ = ctx.put(key, '{"name":"Bob","age":99,"by":"other client"}')
    check(status in (200, 204), f"the other client's PUT answered {status}")
    ctx.set_editor_text('{"name":"Bob","age":28,"by":"page"}')
    ctx.one("save").click()
    return ctx.one("conflict-dialog")


@scenario(page=True)
def conflict_then_overwrite(ctx):
    key = "users/bob.json"
    edit_behind_another_client(ctx, key)
    ctx.screenshot("viewer-conflict")
    ctx.one("overwrite").click()
    wait_until("the page's value on the server", lambda: json.loads(ctx.get(key)[2] or b"null").get("by") == "page")


@scenario(page=True)
def conflict_then_reload(ctx):
    key = "users/bob.json"
    edit_behind_another_client(ctx, key)
    ctx.one("reload").click()
    def shown():
        editing = ctx.shown("editor")
        return "other client" in (ctx.editor_text() if editing else ctx.one("value-view").text)
    wait_until("the other client's value in the page", shown)
    check(json.loads(ctx.get(key)[2]).get("by") == "other client", "reload wrote to the server")


@scenario(page=True)
def live_update_from_another_client(ctx):
    key = "config/app.json"
    ctx.open("/")
    view = ctx.open_key(key)
    ctx.put(key, '{"name":"larder","live":"changed elsewhere"}')
    wait_until("the change to show (changed-mark or the new value)",
               lambda: ctx.shown("changed-mark") or "changed elsewhere" in view.text)
    ctx.put("live/new.json", '{"new":true}')
    wait_until("a new key in the tree", lambda: ctx.tree_item("live/new.json") or ctx.tree_folder("live/"))


@scenario(page=True)
def namespace_picker_switches_the_store(ctx):
    """The picker lists GET /ns/; choosing a namespace shows its keys only,
    and its change feed; the default namespace comes back unchanged."""
    from selenium.webdriver.support.ui import Select
    status, _, body = ctx.http("PUT", "/ns/picker-ns/store/ns-only/one.json", '{"in":"picker-ns"}',
                               {"Content-Type": "application/json"})
    check(status == 201, "PUT into the namespace: %s %r" % (status, body))
    ctx.open("/")
    ctx.one("tree")
    wait_until("the default namespace's keys", lambda: ctx.tree_folder("config/") or ctx.tree_item("config/app.json"))
    picker = ctx.one("namespace-picker")
    wait_until("picker-ns in the picker", lambda: "picker-ns" in picker.text)
    Select(picker).select_by_value("picker-ns")
    wait_until("the namespace's key", lambda: ctx.tree_folder("ns-only/") or ctx.tree_item("ns-only/one.json"))
    check(not ctx.tree_folder("config/") and not ctx.tree_item("config/app.json"),
          "the default namespace's keys still show in picker-ns")
    view = ctx.open_key("ns-only/one.json")
    wait_until("the namespace's value", lambda: "picker-ns" in view.text)
    ctx.http("PUT", "/ns/picker-ns/store/ns-only/two.json", '{"live":true}', {"Content-Type": "application/json"})
    wait_until("a key put into the namespace to show live", lambda: ctx.tree_item("ns-only/two.json"))
    Select(ctx.one("namespace-picker")).select_by_value("")
    wait_until("the default namespace's keys again", lambda: ctx.tree_folder("config/") or ctx.tree_item("config/app.json"))
    check(not ctx.tree_folder("ns-only/"), "picker-ns's keys show in the default namespace")
    ctx.http("DELETE", "/ns/picker-ns")
    ctx.expect_no_console_errors()


@scenario(page=True)
def delete_after_confirm(ctx):
    key = "notes/todo.txt"
    ctx.open("/")
    ctx.open_key(key)
    ctx.one("delete").click()
    ctx.one("confirm").click()
    wait_until("the key gone from the server", lambda: ctx.get(key)[0] == 404)
    wait_until("the key gone from the tree", lambda: ctx.tree_item(key) is None)


@scenario(page=True)
def markup_in_values_stays_text(ctx):
    from selenium.webdriver.common.by import By
    ctx.open("/")
    for key in ("xss/value.json", "xss/value.txt"):
        view = ctx.open_key(key)
        wait_until(f"{key}'s markup shown as text", lambda: "onerror" in view.text)
        check(not view.find_elements(By.CSS_SELECTOR, "img, script, b#xsskey"), f"{key}'s value became elements")
    time.sleep(0.5)
    ctx.no_script_ran()


@scenario(page=True)
def markup_in_keys_stays_text(ctx):
    from selenium.webdriver.common.by import By
    key = "xss/<img src=x onerror=window.__xss=4>"
    ctx.open("/")
    ctx.open_key(key)
    tree = ctx.one("tree")
    check(not tree.find_elements(By.CSS_SELECTOR, "img"), "a key became an element")
    check("<img src=x" in tree.text, "the key is not shown as written")
    time.sleep(0.5)
    ctx.no_script_ran()


@scenario(page=True)
def filter_narrows_the_tree(ctx):
    ctx.open("/")
    ctx.one("tree")
    box = ctx.one("filter")
    box.clear()
    box.send_keys("alice")
    seeded_keys = {entry["key"] for entry in SEED}

    def only_alice():
        shown = {e.get_attribute("data-key") for e in ctx.find("tree-item") if e.is_displayed()} & seeded_keys
        return shown and all("alice" in key for key in shown)
    # The filter may show matches at once or keep folders closed: either way
    # no other seeded key may show, and alice's must be reachable.
    wait_until("only keys matching 'alice'", lambda: only_alice() or ctx.tree_item("config/app.json") is None)
    check(ctx.tree_item("config/app.json") is None, "config/app.json still shows under the filter 'alice'")
    # A whole key and Enter in the filter opens it.
    from selenium.webdriver.common.keys import Keys
    box.clear()
    box.send_keys("users/alice.json" + Keys.ENTER)
    wait_until("users/alice.json open", lambda: ctx.one("value-view").get_attribute("data-open-key") == "users/alice.json")


@scenario(group="token", page=True)
def token_form_unlocks_the_store(ctx):
    from selenium.webdriver.common.by import By
    ctx.open("/")
    form = ctx.one("token-form")
    field = wait_until("an input in the token form", lambda: form.find_elements(By.CSS_SELECTOR, "input")[0])
    field.send_keys(ctx.token)
    field.submit()
    ctx.open_key("config/app.json")
    # Before the token is given, the page's first request is refused: the
    # browser logs that 401 itself, which is the expected way in.
    ctx.expect_no_console_errors(allowed=("401",))


# === The Faults pane (group "faults": a server started with --allow-faults) ===

def faults_now(ctx, namespace=""):
    """GET /faults over HTTP: {"rules": [...], "seed": ...}."""
    status, _, body = ctx.http("GET", namespace + "/faults")
    check(status == 200, f"GET {namespace}/faults answered {status}: {body!r}")
    return json.loads(body)


def put_faults(ctx, rules, namespace=""):
    status, _, body = ctx.http("PUT", namespace + "/faults", json.dumps(rules), {"Content-Type": "application/json"})
    check(status == 200, f"PUT {namespace}/faults answered {status}: {body!r}")


def fault_row(ctx, rule_id):
    """The shown row of the rule named rule_id, or None."""
    from selenium.webdriver.common.by import By
    found = ctx.driver.find_elements(By.CSS_SELECTOR, '[data-testid="fault-rule"][data-rule-id="%s"]' % rule_id)
    return next((e for e in found if e.is_displayed()), None)


def cell(row, testid):
    from selenium.webdriver.common.by import By
    return row.find_element(By.CSS_SELECTOR, f'[data-testid="{testid}"]').text


def open_pane(ctx, name):
    """Opens the page on the pane `name` by its tab (as a user would)."""
    ctx.open("/")
    ctx.one("tab-" + name).click()
    pane = ctx.one(name + "-pane")
    wait_until(f"the {name} tab selected", lambda: ctx.one("tab-" + name).get_attribute("aria-selected") == "true")
    return pane


@scenario(group="faults", page=True)
def faults_pane_lists_rules_with_remaining_counts(ctx):
    put_faults(ctx, [{"id": "slow-users", "prefix": "users/", "methods": ["GET"], "delayMs": 5, "jitterMs": 2,
                      "status": 503, "probability": 0.5, "count": 3},
                     {"prefix": "config/", "delayMs": 1},
                     {"id": "<img/src=x/onerror=window.__xss=6>", "prefix": "xss/<b>", "status": 500}])
    for scheme in ("light", "dark"):
        ctx.color_scheme(scheme)
        open_pane(ctx, "faults")
        row = wait_until("the rule slow-users", lambda: fault_row(ctx, "slow-users"))
        check(cell(row, "fault-remaining") == "3 of 3", f"slow-users remaining: {cell(row, 'fault-remaining')!r}")
        check("users/" in row.text and "GET" in row.text and "status 503" in row.text and "0.5" in row.text,
              f"slow-users row: {row.text!r}")
        other = wait_until("the unnamed rule", lambda: fault_row(ctx, "rule-2"))
        check(len(ctx.find("fault-rule")) == 3, "not three rules shown")
        check(cell(other, "fault-remaining") == "no limit", f"rule-2 remaining: {cell(other, 'fault-remaining')!r}")
        check(ctx.shown("fault-form"), "no add form with --allow-faults")
        time.sleep(0.3)
        ctx.screenshot(f"viewer-faults-{scheme}")
    # A rule's name and prefix are text, never markup.
    from selenium.webdriver.common.by import By
    pane = ctx.one("faults-pane")
    check("<img/src=x" in pane.text and "xss/<b>" in pane.text, "the markup-like rule is not shown as written")
    check(not pane.find_elements(By.CSS_SELECTOR, "td img, td b"), "a rule's fields became elements")
    ctx.no_script_ran()
    ctx.expect_no_console_errors()


@scenario(group="faults", page=True)
def faults_pane_shows_fields_it_does_not_know(ctx):
    """A rule field newer than the page (here answered by a stand-in for
    GET /faults) shows as "name: value"; the network fields as the effect."""
    rule = {"id": "future", "prefix": "f/", "methods": None, "delayMs": 0, "jitterMs": 0, "status": None,
            "probability": 1, "count": None, "remaining": None, "matched": 0, "fired": 0,
            "drop": "after", "truncate": 10, "bytesPerSecond": 512, "corrupt": {"bits": 3}, "flakiness": "<i>x</i>"}
    ctx.browser.inject("""
        const realFetch = window.fetch;
        window.fetch = (url, options) => (String(url).endsWith('/faults') && (!options || !options.method || options.method === 'GET'))
          ? Promise.resolve(new Response(JSON.stringify(%s), {status: 200, headers: {'Content-Type': 'application/json'}}))
          : realFetch(url, options);""" % json.dumps({"rules": [rule], "seed": 7}))
    open_pane(ctx, "faults")
    row = wait_until("the rule future", lambda: fault_row(ctx, "future"))
    check("drop after" in row.text and "truncate after 10 B" in row.text and "512 B/s" in row.text,
          f"the network fields in the effect: {row.text!r}")
    other = cell(row, "fault-other")
    check('corrupt: {"bits":3}' in other and "flakiness: <i>x</i>" in other, f"the unknown fields: {other!r}")
    check("seed 7" in ctx.one("faults-status").text, "the seed is not shown")
    ctx.expect_no_console_errors()


@scenario(group="faults", page=True)
def faults_pane_adds_and_removes_a_rule(ctx):
    from selenium.webdriver.common.by import By
    put_faults(ctx, [{"id": "keep-me", "prefix": "keep/", "status": 500, "count": 4}])
    open_pane(ctx, "faults")
    wait_until("the rule keep-me", lambda: fault_row(ctx, "keep-me"))
    form = ctx.one("fault-form")
    ctx.one("fault-id").send_keys("from-form")
    ctx.one("fault-prefix").send_keys("form/")
    form.find_element(By.CSS_SELECTOR, '[data-testid="fault-method"][data-method="PUT"]').click()
    ctx.one("fault-status").send_keys("429")
    ctx.one("fault-count").send_keys("2")
    ctx.one("fault-add").click()
    wait_until("from-form in the page", lambda: fault_row(ctx, "from-form"))
    rules = {rule["id"]: rule for rule in faults_now(ctx)["rules"]}
    check(set(rules) == {"keep-me", "from-form"}, f"the server has {sorted(rules)}")
    added = rules["from-form"]
    check(added["prefix"] == "form/" and added["methods"] == ["PUT"] and added["status"] == 429 and added["count"] == 2,
          f"the added rule is {added}")

    # A rule the server refuses: its 400 message is shown, nothing changes.
    ctx.one("fault-prefix").send_keys("bad/")
    ctx.one("fault-status").clear()
    ctx.one("fault-status").send_keys("200")
    ctx.one("fault-add").click()
    error = ctx.one("fault-error")
    wait_until("the server's message", lambda: "status must be" in error.text)
    check(len(faults_now(ctx)["rules"]) == 2, "a refused rule changed the rules")
    ctx.screenshot("viewer-faults-error")

    # Remove keep-me (after firing once: it keeps the firings it had left).
    ctx.get("keep/x")
    row = fault_row(ctx, "keep-me")
    row.find_element(By.CSS_SELECTOR, '[data-testid="fault-remove"]').click()
    ctx.one("confirm").click()
    wait_until("keep-me gone from the page", lambda: fault_row(ctx, "keep-me") is None)
    rules = faults_now(ctx)["rules"]
    check([rule["id"] for rule in rules] == ["from-form"], f"after the removal the server has {rules}")
    check(rules[0]["remaining"] == 2 and rules[0]["methods"] == ["PUT"], f"from-form changed: {rules[0]}")
    ctx.expect_no_console_errors(allowed=("400",))


@scenario(group="faults", page=True)
def a_fired_rule_shows_its_remaining_count_after_refresh(ctx):
    put_faults(ctx, [{"id": "fires", "prefix": "fire/", "status": 503, "count": 3}])
    open_pane(ctx, "faults")
    row = wait_until("the rule fires", lambda: fault_row(ctx, "fires"))
    check(cell(row, "fault-remaining") == "3 of 3", f"before: {cell(row, 'fault-remaining')!r}")
    for _ in range(2):
        status, headers, _ = ctx.get("fire/x")
        check(status == 503 and headers.get("larder-fault") == "fires", f"the rule did not fire: {status} {headers}")
    ctx.one("faults-refresh").click()
    wait_until("1 of 3 left", lambda: cell(fault_row(ctx, "fires"), "fault-remaining") == "1 of 3")
    check(cell(fault_row(ctx, "fires"), "fault-fired") == "2", "fired is not 2")


@scenario(group="faults", page=True)
def faults_pane_follows_the_namespace(ctx):
    from selenium.webdriver.support.ui import Select
    put_faults(ctx, [{"id": "default-only", "prefix": "d/"}])
    ctx.http("PUT", "/ns/fault-ns/store/x.json", "{}", {"Content-Type": "application/json"})
    put_faults(ctx, [{"id": "ns-only", "prefix": "n/"}], namespace="/ns/fault-ns")
    open_pane(ctx, "faults")
    wait_until("the default namespace's rule", lambda: fault_row(ctx, "default-only"))
    picker = ctx.one("namespace-picker")
    wait_until("fault-ns in the picker", lambda: "fault-ns" in picker.text)
    Select(picker).select_by_value("fault-ns")
    wait_until("the namespace's rule", lambda: fault_row(ctx, "ns-only"))
    check(fault_row(ctx, "default-only") is None, "the default namespace's rule shows in fault-ns")
    ctx.http("DELETE", "/ns/fault-ns")
    ctx.expect_no_console_errors()


@scenario(page=True)
def faults_pane_says_faults_are_off_without_the_flag(ctx):
    check(ctx.http("GET", "/faults")[0] == 404, "this server has /faults")
    for scheme in ("light", "dark"):
        ctx.color_scheme(scheme)
        open_pane(ctx, "faults")
        off = ctx.one("faults-off")
        check("--allow-faults" in off.text, f"the notice: {off.text!r}")
        check(not ctx.shown("fault-form") and not ctx.shown("fault-remove"), "editing offered without --allow-faults")
        ctx.screenshot(f"viewer-faults-off-{scheme}")
    # The Keys tab comes back by keyboard: Left from the Faults tab twice.
    from selenium.webdriver.common.keys import Keys
    ctx.one("tab-faults").send_keys(Keys.ARROW_LEFT)
    wait_until("the Requests tab", lambda: ctx.one("tab-requests").get_attribute("aria-selected") == "true")
    ctx.one("tab-requests").send_keys(Keys.ARROW_LEFT)
    wait_until("the Keys pane", lambda: ctx.shown("tree") and not ctx.shown("requests-pane"))
    ctx.expect_no_console_errors(allowed=("/faults",))


# === The Requests pane (the request journal, GET /journal) =====================

def journal_rows(ctx):
    """The shown journal entries, newest first: [{seq, method, path, status, fault}]."""
    return ctx.driver.execute_script("""
        return [...document.querySelectorAll('[data-testid="journal-entry"]')].map((row) => ({
          seq: Number(row.dataset.seq), method: row.dataset.method, path: row.dataset.path,
          status: row.dataset.status,
          fault: row.querySelector('[data-testid="fault-badge"]')?.textContent ?? null}));""")


def journal_now(ctx, query="", namespace=""):
    """GET /journal over HTTP (as another client would): {requests, next, dropped}."""
    status, _, body = ctx.http("GET", namespace + "/journal" + query)
    check(status == 200, f"GET {namespace}/journal{query} answered {status}: {body!r}")
    return json.loads(body)


def row_for(ctx, path, **fields):
    """The first shown entry with that path (and those fields), or None."""
    return next((row for row in journal_rows(ctx) if row["path"] == path
                 and all(row[name] == value for name, value in fields.items())), None)


def journal_urls(ctx):
    """The /journal URLs the page fetched (the browser's resource timing)."""
    return ctx.driver.execute_script(
        "return performance.getEntriesByType('resource').map((e) => e.name).filter((n) => n.includes('/journal'))")


def open_requests(ctx):
    open_pane(ctx, "requests")
    wait_until("the journal followed live", lambda: ctx.one("journal-live").get_attribute("data-state") == "live")


@scenario(page=True)
def requests_appear_live_through_the_long_poll(ctx):
    ctx.put("journal-live/seen.json", '{"before":true}')
    open_requests(ctx)
    wait_until("the request made before", lambda: row_for(ctx, "/store/journal-live/seen.json", method="PUT"))
    ctx.driver.execute_script("window.__sameDocument = true")
    time.sleep(1.0)  # the page is parked in its long poll now
    new = "journal-live/new-%d.json" % time.time_ns()  # a new key: 201, on a server used twice too
    ctx.put(new, '{"live":true}')
    ctx.get(new)
    ctx.get("journal-live/absent.json")
    wait_until("the PUT shown live", lambda: row_for(ctx, "/store/" + new, method="PUT", status="201"))
    wait_until("the GETs shown live", lambda: row_for(ctx, "/store/journal-live/absent.json", method="GET", status="404"))
    check(ctx.driver.execute_script("return window.__sameDocument === true"), "the page reloaded")
    # The address names the pane: a reload comes back to it, and only it shows.
    check(ctx.driver.current_url.endswith("#/requests"), f"the address is {ctx.driver.current_url}")
    ctx.open("/#/requests")
    wait_until("the Requests pane after a reload", lambda: ctx.shown("requests-pane") and row_for(ctx, "/store/" + new))
    check(not ctx.shown("tree") and not ctx.shown("value-view") and not ctx.shown("faults-pane"),
          "another pane shows beside the Requests pane")
    rows = journal_rows(ctx)
    check(rows == sorted(rows, key=lambda row: -row["seq"]), "the journal is not newest first")
    check(any("wait=" in url and "since=" in url for url in journal_urls(ctx)), "no long poll (since=…&wait=…) was sent")
    for scheme in ("light", "dark"):
        ctx.color_scheme(scheme)
        time.sleep(0.3)
        ctx.screenshot(f"viewer-requests-{scheme}")
    ctx.expect_no_console_errors(allowed=("journal-live/absent.json",))


@scenario(page=True)
def requests_filters_go_to_the_server(ctx):
    from selenium.webdriver.support.ui import Select
    ctx.put("jf/a.json", '{"a":1}')
    ctx.get("jf/a.json")
    ctx.get("jf/missing.json")
    ctx.http("DELETE", ctx.store_path("jf/a.json"))
    ctx.get("jf-other/x.json")
    open_requests(ctx)
    wait_until("the requests under jf/", lambda: row_for(ctx, "/store/jf-other/x.json"))

    def shows_exactly(query):
        expected = {entry["seq"] for entry in journal_now(ctx, query)["requests"]}
        return expected and {row["seq"] for row in journal_rows(ctx)} == expected

    ctx.one("journal-prefix").send_keys("jf/")
    wait_until("only jf/ requests (as GET /journal?prefix=jf/ answers)", lambda: shows_exactly("?prefix=jf%2F"))
    check(not row_for(ctx, "/store/jf-other/x.json"), "jf-other/ shows under the prefix jf/")
    Select(ctx.one("journal-method")).select_by_value("GET")
    wait_until("only GETs under jf/", lambda: shows_exactly("?prefix=jf%2F&method=GET"))
    check({row["method"] for row in journal_rows(ctx)} == {"GET"}, "not only GETs")
    ctx.one("journal-status-filter").send_keys("404")
    wait_until("the one 404", lambda: shows_exactly("?prefix=jf%2F&method=GET&status=404"))
    check([row["path"] for row in journal_rows(ctx)] == ["/store/jf/missing.json"], f"shown: {journal_rows(ctx)}")
    ctx.screenshot("viewer-requests-filtered")
    # The filters went to the server as query parameters (not a filter over a loaded page).
    urls = journal_urls(ctx)
    check(any("prefix=jf%2F" in url and "method=GET" in url and "status=404" in url for url in urls),
          f"no /journal request with the three filters: {urls}")
    # A class of statuses too (4xx), and clearing the method widens again.
    ctx.one("journal-status-filter").clear()
    ctx.one("journal-status-filter").send_keys("2xx")
    Select(ctx.one("journal-method")).select_by_value("")
    wait_until("the 2xx under jf/", lambda: shows_exactly("?prefix=jf%2F&status=2xx"))
    shown = journal_rows(ctx)
    check({row["method"] for row in shown} == {"PUT", "GET", "DELETE"}, f"shown: {shown}")
    # The method change applied the typed "2xx" as well: the typed filter's
    # pending restart (300 ms after the last key) finds nothing new to load,
    # so the list is not emptied and fetched a second time.
    time.sleep(0.8)
    first_pages = [url for url in journal_urls(ctx) if "status=2xx" in url and "limit=" in url and "method=" not in url]
    check(len(first_pages) == 1, f"the 2xx page was loaded {len(first_pages)} times: {first_pages}")
    check(journal_rows(ctx) == shown, f"the list changed after the filters settled: {journal_rows(ctx)}")
    ctx.expect_no_console_errors(allowed=("jf/missing.json", "jf-other/x.json"))


@scenario(page=True)
def clicking_a_request_opens_its_key(ctx):
    from selenium.webdriver.common.by import By
    key = "journal-open/my key é.json"
    ctx.put(key, '{"opened":"from the journal"}')
    open_requests(ctx)
    path = "/store/journal-open/my%20key%20%C3%A9.json"
    wait_until("the PUT of the key", lambda: row_for(ctx, path, method="PUT"))
    row = ctx.driver.find_element(By.CSS_SELECTOR, '[data-testid="journal-entry"][data-path="%s"]' % path)
    row.find_elements(By.CSS_SELECTOR, "td")[0].click()  # the row, not only its link
    view = ctx.one("value-view")
    wait_until("the key open", lambda: view.get_attribute("data-open-key") == key)
    wait_until("its value", lambda: "from the journal" in view.text)
    check(ctx.one("tab-keys").get_attribute("aria-selected") == "true", "the Keys tab is not selected")
    check(not ctx.shown("requests-pane"), "the Requests pane still shows")
    ctx.expect_no_console_errors()


@scenario(page=True)
def clear_empties_the_journal(ctx):
    ctx.put("journal-clear/a.json", '{}')
    open_requests(ctx)
    wait_until("the PUT", lambda: row_for(ctx, "/store/journal-clear/a.json"))
    last = max(row["seq"] for row in journal_rows(ctx))
    ctx.one("journal-clear").click()
    ctx.one("confirm").click()
    wait_until("the rows gone", lambda: all(row["seq"] > last for row in journal_rows(ctx)))
    check(all(entry["seq"] > last for entry in journal_now(ctx)["requests"]), "the server's journal was not emptied")
    ctx.put("journal-clear/b.json", '{}')
    wait_until("a request after the clear shown live", lambda: row_for(ctx, "/store/journal-clear/b.json"))
    ctx.expect_no_console_errors()


@scenario(page=True)
def requests_pane_shows_the_picked_namespace_only(ctx):
    from selenium.webdriver.support.ui import Select
    ctx.http("PUT", "/ns/journal-ns/store/nsj/a.json", '{"in":"journal-ns"}', {"Content-Type": "application/json"})
    ctx.put("dj/b.json", '{"in":"default"}')
    open_requests(ctx)
    wait_until("the default namespace's request", lambda: row_for(ctx, "/store/dj/b.json"))
    check(not row_for(ctx, "/store/nsj/a.json"), "journal-ns's request shows in the default namespace")
    picker = ctx.one("namespace-picker")
    wait_until("journal-ns in the picker", lambda: "journal-ns" in picker.text)
    Select(picker).select_by_value("journal-ns")
    wait_until("the namespace's request", lambda: row_for(ctx, "/store/nsj/a.json", method="PUT"))
    check(not row_for(ctx, "/store/dj/b.json"), "the default namespace's request shows in journal-ns")
    check(ctx.one("tab-requests").get_attribute("aria-selected") == "true", "the picker left the Requests pane")
    time.sleep(0.5)
    ctx.put("dj/c.json", '{"in":"default"}')
    ctx.http("PUT", "/ns/journal-ns/store/nsj/live.json", '{}', {"Content-Type": "application/json"})
    wait_until("the namespace's new request live", lambda: row_for(ctx, "/store/nsj/live.json"))
    check(not row_for(ctx, "/store/dj/c.json"), "a default-namespace request shows in journal-ns")
    check(any("/ns/journal-ns/journal" in url for url in journal_urls(ctx)), "the page never asked /ns/journal-ns/journal")
    ctx.http("DELETE", "/ns/journal-ns")
    ctx.expect_no_console_errors()


@scenario(page=True)
def requests_pane_shows_a_moved_clock_and_saves_a_har(ctx):
    from selenium.webdriver.support.ui import Select
    ns = "/ns/clock-ns"
    ctx.http("PUT", ns + "/store/ck/a.json", '{"in":"clock-ns"}', {"Content-Type": "application/json"})
    status, _, body = ctx.http("POST", ns + "/clock", '{"freeze":true}', {"Content-Type": "application/json"})
    check(status == 200, f"POST /clock answered {status}: {body!r}")
    status, _, body = ctx.http("POST", ns + "/clock", '{"set":"2030-01-02T03:04:05Z"}', {"Content-Type": "application/json"})
    check(status == 200, f"POST /clock answered {status}: {body!r}")
    open_requests(ctx)
    check(not ctx.shown("namespace-clock"), "the default namespace's clock, never moved, is shown")
    picker = ctx.one("namespace-picker")
    wait_until("clock-ns in the picker", lambda: "clock-ns" in picker.text)
    Select(picker).select_by_value("clock-ns")
    wait_until("the moved clock shown", lambda: ctx.shown("namespace-clock"))
    label = ctx.one("namespace-clock")
    check(label.get_attribute("data-now") == "2030-01-02T03:04:05.000Z", f"clock shown: {label.text!r}")
    check("frozen" in label.text, f"the clock is frozen but shows {label.text!r}")
    # A move made while the pane shows is seen through the journal.
    status, _, body = ctx.http("POST", ns + "/clock", '{"advance":"1d"}', {"Content-Type": "application/json"})
    check(status == 200, f"POST /clock answered {status}: {body!r}")
    wait_until("the clock a day later", lambda: label.get_attribute("data-now") == "2030-01-03T03:04:05.000Z")
    # Reading the clock adds requests to the journal; it must not feed itself.
    time.sleep(1)
    before = len(journal_now(ctx, namespace=ns)["requests"])
    time.sleep(1.5)
    after = len(journal_now(ctx, namespace=ns)["requests"])
    check(after - before <= 2, f"the pane keeps asking: {after - before} journal entries in 1.5 s")
    ctx.one("journal-har").click()
    wait_until("the HAR fetched", lambda: any("/ns/clock-ns/journal" in url and "format=har" in url for url in journal_urls(ctx)))
    wait_until("the HAR saved through a download link",
               lambda: ctx.driver.execute_script(
                   "const a = document.querySelector('[data-testid=\"journal-har-link\"]');"
                   " return a ? [a.download, a.href.startsWith('blob:')] : null;") == ["larder-journal.har", True])
    ctx.http("DELETE", ns)
    ctx.expect_no_console_errors()


@scenario(group="faults", page=True)
def a_faulted_request_shows_its_fault_badge(ctx):
    ctx.put("badge/ok.json", '{}')
    put_faults(ctx, [{"id": "flaky-badge", "prefix": "badge/", "methods": ["GET"], "status": 503, "count": 1}])
    open_requests(ctx)
    time.sleep(0.5)
    status, _, _ = ctx.get("badge/ok.json")
    check(status == 503, f"the rule did not fire: {status}")
    ctx.get("badge/ok.json")
    faulted = wait_until("the faulted GET", lambda: row_for(ctx, "/store/badge/ok.json", method="GET", status="503"))
    check(faulted["fault"] == "flaky-badge", f"the faulted entry's badge: {faulted}")
    plain = wait_until("the GET after it", lambda: row_for(ctx, "/store/badge/ok.json", method="GET", status="200"))
    check(plain["fault"] is None, f"a badge on a request no rule acted on: {plain}")
    for scheme in ("light", "dark"):
        ctx.color_scheme(scheme)
        time.sleep(0.3)
        ctx.screenshot(f"viewer-requests-fault-{scheme}")
    ctx.expect_no_console_errors(allowed=("badge/ok.json",))


@scenario(group="token", page=True)
def requests_pane_sends_the_token(ctx):
    from selenium.webdriver.common.by import By
    ctx.put("token-journal/a.json", "{}")
    ctx.open("/#/requests")
    form = ctx.one("token-form")
    field = wait_until("an input in the token form", lambda: form.find_elements(By.CSS_SELECTOR, "input")[0])
    field.send_keys(ctx.token)
    field.submit()
    wait_until("the journal with the token", lambda: row_for(ctx, "/store/token-journal/a.json", method="PUT"))
    ctx.put("token-journal/b.json", "{}")
    wait_until("a request shown live with the token", lambda: row_for(ctx, "/store/token-journal/b.json"))
    ctx.expect_no_console_errors(allowed=("401",))


# === Running ==================================================================

def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url")
    parser.add_argument("--group", default="plain")
    parser.add_argument("--page", action="store_true", help="also run PAGE_SCENARIOS (the new page is there)")
    parser.add_argument("--token")
    parser.add_argument("--screenshots")
    parser.add_argument("--only", nargs="*", default=[])
    parser.add_argument("--list", action="store_true", help="print every scenario as JSON and exit")
    args = parser.parse_args()
    if args.list:
        print(json.dumps([{"scenario": name, "group": group, "page": name in PAGE_SCENARIOS}
                          for name, (group, _) in SCENARIOS.items()]))
        return 0
    names = [name for name, (group, _) in SCENARIOS.items()
             if group == args.group and (args.page or name not in PAGE_SCENARIOS)
             and (not args.only or name in args.only)]
    failed = 0
    browser = Browser(args.base_url.rstrip("/"))
    for name in names:
        ctx = Context(args.base_url, args.token, args.screenshots, browser)
        started = time.monotonic()
        error = None
        try:
            SCENARIOS[name][1](ctx)
        except Failure as failure:
            error = str(failure)
        except Exception as exception:  # the exception's own line first: a log excerpt may keep only that
            error = f"{type(exception).__name__}: {exception}\n" + traceback.format_exc(limit=3)
        finally:
            if error and browser.started:
                try:
                    ctx.screenshot("failed-" + name)
                except Exception:
                    pass
                browser.quit()  # what a failed scenario left behind goes with it
            else:
                browser.reset()
        failed += error is not None
        print(json.dumps({"scenario": name, "ok": error is None, "error": error,
                          "seconds": round(time.monotonic() - started, 2)}), flush=True)
    browser.quit()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
