"""The plugin run as a user runs it: pytest in a subprocess (pytester), the
real larder binary (LARDER_BIN), pytest-xdist for the parallel cases."""

import json
import os
import textwrap

import pytest

from pytest_larder import LarderServer


@pytest.fixture
def fixtures_dir(pytester):
    users = pytester.path / "fixtures" / "users"
    users.mkdir(parents=True)
    (users / "1.json").write_text(json.dumps({"name": "Ada"}))
    pytester.makeini("[pytest]\nlarder_fixtures = fixtures\n")
    return pytester.path / "fixtures"


def test_each_test_starts_from_the_fixtures(pytester, fixtures_dir):
    pytester.makepyfile(textwrap.dedent("""
        def test_writes(larder):
            assert larder.get_json("users/1.json") == {"name": "Ada"}
            larder.put_json("users/1.json", {"name": "changed"})
            larder.put_json("users/2.json", {"name": "new"})
            assert larder.keys("users/") == ["users/1.json", "users/2.json"]

        def test_sees_only_the_fixtures_again(larder):
            assert larder.get_json("users/1.json") == {"name": "Ada"}
            assert larder.get("users/2.json") is None
            assert larder.url.rsplit("/ns/", 1)[1].startswith("pytest-")
    """))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_four_xdist_workers_never_see_each_others_writes(pytester, fixtures_dir):
    # 4 workers x 50 tests, all writing the same key names at the same time.
    pytester.makepyfile(textwrap.dedent("""
        import os, time, pytest

        @pytest.mark.parametrize("n", range(200))
        def test_same_keys(larder, n):
            me = f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-{n}"
            larder.put_json("shared", me)
            larder.put_json(f"list/{n % 3}", me)
            time.sleep(0.005)
            assert larder.get_json("shared") == me
            assert larder.keys("list/") == [f"list/{n % 3}"]
            assert larder.get_json("users/1.json") == {"name": "Ada"}
    """))
    result = pytester.runpytest_subprocess("-n", "4", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=200)


def test_helpers_snapshot_restore_and_faults(pytester, fixtures_dir):
    pytester.makepyfile(textwrap.dedent("""
        def test_helpers(larder):
            larder.put_json("cart/1", {"items": 1})
            saved = larder.snapshot("cart/")
            larder.put_json("cart/1", {"items": 99})
            assert larder.restore(saved, replace=True, prefix="cart/")["restored"] == 1
            assert larder.get_json("cart/1") == {"items": 1}

            larder.fault("slow/", status=503, count=1)
            status, headers, _ = larder.request("GET", "/store/slow/x")
            assert status == 503 and "Larder-Fault" in headers
            assert larder.request("GET", "/store/slow/x")[0] == 404
            larder.clear_faults()
    """))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_requests_are_what_this_test_sent(pytester, fixtures_dir):
    pytester.makepyfile(textwrap.dedent("""
        import urllib.request

        def read_user(base_url, n):
            # The code under test: its own HTTP client, the namespace's URL.
            with urllib.request.urlopen(f"{base_url}/store/users/{n}.json") as resp:
                return resp.read()

        def test_the_code_read_the_user_once(larder):
            read_user(larder.url, 1)
            assert len(larder.requests(method="GET", prefix="users/1")) == 1
            (entry,) = larder.requests()
            assert entry["path"] == "/store/users/1.json" and entry["status"] == 200
            assert entry["bytesOut"] == len(b'{"name": "Ada"}') and entry["etag"]

        def test_each_test_starts_with_an_empty_journal_and_filters_narrow_it(larder):
            assert larder.requests() == []
            assert larder.get("users/2.json") is None
            larder.put_json("users/2.json", {"name": "Grace"})
            assert [r["status"] for r in larder.requests(status="4xx")] == [404]
            assert [r["method"] for r in larder.requests(status=201)] == ["PUT"]
            first = larder.requests()[0]["seq"]
            assert [r["method"] for r in larder.requests(since=first)] == ["PUT"]
            assert len(larder.requests(limit=1)) == 1
            larder.clear_requests()
            assert larder.requests() == []
    """))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_each_xdist_worker_sees_only_its_own_requests(pytester, fixtures_dir):
    pytester.makepyfile(textwrap.dedent("""
        import pytest

        @pytest.mark.parametrize("n", range(40))
        def test_counts_its_own_reads(larder, n):
            for _ in range(n % 5):
                larder.get("users/1.json")
            assert len(larder.requests(method="GET", prefix="users/")) == n % 5
    """))
    result = pytester.runpytest_subprocess("-n", "4", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=40)


def test_larder_url_points_every_worker_at_a_running_server(pytester, monkeypatch):
    # As with a docker compose sidecar: the plugin starts nothing, and drops
    # its namespaces when the workers end.
    server = LarderServer()
    try:
        monkeypatch.setenv("LARDER_URL", server.url)
        pytester.makepyfile(textwrap.dedent(f"""
            import pytest

            @pytest.mark.parametrize("n", range(8))
            def test_uses_the_sidecar(larder, n):
                assert larder.url.startswith("{server.url}/ns/pytest-")
                larder.put_json("k", n)
                assert larder.get_json("k") == n
        """))
        result = pytester.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider")
        result.assert_outcomes(passed=8)
        namespaces = json.loads(_get(server.url + "/ns/"))["namespaces"]
        assert [n["name"] for n in namespaces if n["name"].startswith("pytest-")] == []
    finally:
        server.stop()


def _get(url):
    import urllib.request
    with urllib.request.urlopen(url, timeout=10) as resp:
        return resp.read()


def test_a_session_that_expires_after_30_minutes_is_tested_without_waiting(pytester, fixtures_dir):
    pytester.makepyfile(textwrap.dedent("""
        import datetime

        def test_the_session_expires(larder):
            larder.request("PUT", "/store/sessions/abc?ttl=1800", b'{"user": 1}')
            larder.clock.advance("29m")
            assert larder.get_json("sessions/abc") == {"user": 1}
            larder.clock.advance(datetime.timedelta(minutes=2))
            assert larder.get_json("sessions/abc") is None
            assert larder.clock.state()["offsetMs"] >= 31 * 60 * 1000

        def test_the_clock_is_the_system_clock_again(larder):
            state = larder.clock.state()
            assert state["offsetMs"] == 0 and not state["frozen"]
            now = datetime.datetime.now(datetime.timezone.utc)
            assert abs((larder.clock.now() - now).total_seconds()) < 60

        def test_freeze_and_set(larder):
            larder.clock.freeze()
            larder.clock.set(datetime.datetime(2030, 1, 2, 3, 4, 5))
            assert larder.clock.now() == datetime.datetime(2030, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
            larder.put_json("doc", {"v": 1})
            status, headers, _ = larder.request("GET", "/store/doc")
            assert headers["Last-Modified"] == "Wed, 02 Jan 2030 03:04:05 GMT"
    """))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
