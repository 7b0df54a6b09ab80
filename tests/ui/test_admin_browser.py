"""The access-control pages in a real headless browser, on a server with access control on: a
read key sees no link to them and is refused; an admin follows the links, creates a key (shown
once, working on the API at once), revokes it after confirming (declined, nothing happens) and
finds both in the audit log, filtered by action."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.auth.conftest import make_key
from tests.ui.test_browser import browser, js_errors, load, message_text, serving, wait_until

pytestmark = pytest.mark.slow
__all__ = ["browser"]  # the fixture, shared with test_browser.py


@pytest.fixture(scope="module")
def keyed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, str]]:
    """(base URL, an admin key, a read key) of a server with CROWDQRELS_AUTH=required."""
    tmp = tmp_path_factory.mktemp("keys")
    with serving(tmp, CROWDQRELS_AUTH="required") as base:
        url = f"sqlite:///{tmp / 'ui.db'}"
        yield base, make_key(url, "admin", "admin"), make_key(url, "viewer", "read")


def test_an_admin_manages_keys_in_the_browser(keyed_server, browser) -> None:  # type: ignore[no-untyped-def]
    from selenium.webdriver.support.ui import Select

    base, admin, read = keyed_server
    driver = browser

    def sign_in(key: str) -> None:
        driver.delete_all_cookies()
        load(driver, base + "/ui/")
        wait_until(lambda: "/ui/login" in driver.current_url, what="the sign-in page")
        driver.find_element("id", "key").send_keys(key)
        driver.find_element("css selector", "form button").click()
        wait_until(lambda: driver.current_url == base + "/ui/", what="the home page")

    def state_of(name: str) -> str:
        return str(driver.find_element(
            "css selector", f"#keys tr[data-key='{name}'] .key-state").text)

    sign_in(read)
    assert not driver.find_elements("id", "nav-keys")
    assert not driver.find_elements("id", "nav-audit")
    load(driver, base + "/ui/keys")
    assert "insufficient_scope" in driver.find_element("tag name", "body").text
    assert all("status of 403" in e for e in js_errors(driver))  # that refusal, logged

    sign_in(admin)
    driver.find_element("id", "nav-keys").click()
    wait_until(lambda: driver.find_elements("id", "key-form"), what="the keys page")
    assert driver.find_element("tag name", "h1").text == "API keys"
    driver.find_element("id", "key-name").send_keys("robot")
    Select(driver.find_element("id", "key-scope")).select_by_value("ingest")
    driver.find_element("css selector", "#key-form button").click()
    wait_until(lambda: driver.find_elements("id", "new-key"), what="the new key")
    assert "Copy the key now: it is not shown again." in driver.find_element(
        "id", "key-created").text
    secret = driver.find_element("id", "new-key").get_attribute("value")
    assert secret.startswith("cq_")
    with httpx.Client(base_url=base, timeout=30) as api:
        bearer = {"Authorization": f"Bearer {secret}"}
        assert api.get("/api/v1/collections", headers=bearer).status_code == 200

        driver.find_element("link text", "Back to the keys").click()
        wait_until(lambda: driver.find_elements("id", "keys"), what="the keys page")
        assert secret not in driver.page_source  # shown once
        assert state_of("robot") == "active"

        # revoke, declined at the confirmation: nothing happens
        revoke = "#keys tr[data-key='robot'] form button"
        driver.find_element("css selector", revoke).click()
        confirm = driver.switch_to.alert
        assert "Revoke the key robot?" in confirm.text
        confirm.dismiss()
        assert state_of("robot") == "active"
        assert api.get("/api/v1/collections", headers=bearer).status_code == 200
        # and accepted: revoked, the key refused at once
        driver.find_element("css selector", revoke).click()
        driver.switch_to.alert.accept()
        wait_until(lambda: "key robot revoked" in message_text(driver), what="the key revoked")
        assert state_of("robot").startswith("revoked ")
        assert not driver.find_elements("css selector", revoke)
        assert api.get("/api/v1/collections", headers=bearer).status_code == 401

    driver.find_element("id", "nav-audit").click()
    wait_until(lambda: driver.find_elements("id", "audit-events"), what="the audit log")

    def actions() -> list[str]:
        return [row.find_elements("tag name", "td")[2].text for row in
                driver.find_elements("css selector", "#audit-events tbody tr")]

    assert actions() == ["key_revoked", "key_created"]
    Select(driver.find_element("id", "audit-action")).select_by_value("key_created")
    driver.find_element("css selector", "#audit-filters button").click()
    wait_until(lambda: "action=key_created" in driver.current_url, what="the filtered log")
    assert actions() == ["key_created"]
    assert js_errors(driver) == []


def test_the_access_control_pages_fit_a_narrow_window(keyed_server, browser) -> None:  # type: ignore[no-untyped-def]
    """At 400 px the keys page (its table scrolls inside itself), a refused key form and the
    audit log are no wider than the window: the revoke column's hidden header, absolutely
    positioned, once widened the page to where it sits in the scrolled table."""
    from tests.ui.test_browser import page_overflow

    base, admin, _ = keyed_server
    driver = browser
    driver.delete_all_cookies()
    load(driver, base + "/ui/login")
    driver.find_element("id", "key").send_keys(admin)
    driver.find_element("css selector", "form button").click()
    wait_until(lambda: driver.current_url == base + "/ui/", what="the home page")
    try:
        driver.set_window_size(400, 900)
        load(driver, base + "/ui/keys")
        assert driver.find_elements("css selector", "#keys tbody tr")
        assert page_overflow(driver) <= 0, "/ui/keys"
        driver.find_element("id", "key-name").send_keys("admin")  # taken: the form refused
        driver.find_element("css selector", "#key-form button").click()
        wait_until(lambda: driver.find_elements("id", "form-error"), what="the refusal")
        assert page_overflow(driver) <= 0, "/ui/keys refused"
        load(driver, base + "/ui/audit")
        assert page_overflow(driver) <= 0, "/ui/audit"
    finally:
        driver.set_window_size(1400, 1000)
