"""The HTTP API over a real uvicorn server: routes, tokens, limits, errors, schema, metrics."""

from __future__ import annotations

import json

import httpx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .conftest import Live, open_service, open_writer_process

TOKEN = "s3cret-t0ken"
CONFIG = {
    "policies": [
        {
            "id": "rec",
            "name": "eps-greedy",
            "params": {"epsilon": 0.2},
            "token_env": "T",
        },
        {"id": "open", "name": "linucb"},
    ],
    "limits": {"max_body_bytes": 4096, "max_arms": 8, "max_features": 6},
}
AUTH = {"Authorization": f"Bearer {TOKEN}"}
ARMS = np.round(np.random.default_rng(0).normal(size=(4, 3)), 3).tolist()


@pytest.fixture(scope="module", params=["thread", "process"])
def live(request, tmp_path_factory):
    """The app with its writer in a thread, then in a process (``serve.process``)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('app') / 'e.db'}"
    if request.param == "thread":
        service = open_service(CONFIG, url)
    else:
        service = open_writer_process(CONFIG, url)
    running = Live(service, {"rec": TOKEN, "open": None})
    running.mode = request.param
    with running, httpx.Client(base_url=running.url, timeout=30) as client:
        running.client = client
        yield running


def post(live, path, body, headers=AUTH):
    return live.client.post(path, json=body, headers=headers)


def counts(live, policy="rec"):
    return live.client.get(f"/v1/policies/{policy}", headers=AUTH).json()


def test_decide_feedback_and_status(live):
    r = post(
        live, "/v1/policies/rec/decide", {"context": {"arms": ARMS}, "event_id": "a1"}
    )
    assert r.status_code == 200
    body = r.json()
    assert body["event_id"] == "a1" and 0 <= body["action"] < 4
    assert body["propensity"] == 0.25  # eps-greedy, 4 tied arms: 0.2 / 4 + 0.8 / 4
    again = post(
        live, "/v1/policies/rec/decide", {"context": {"arms": ARMS}, "event_id": "a1"}
    )
    assert again.json() == body
    fb = {"event_id": "a1", "feedback": 1}
    assert post(live, "/v1/policies/rec/feedback", fb).json() == {"duplicate": False}
    assert post(live, "/v1/policies/rec/feedback", fb).json() == {"duplicate": True}
    missing = post(live, "/v1/policies/rec/feedback", {"event_id": "zz", "feedback": 1})
    assert missing.status_code == 404 and "event_id" in missing.json()["detail"]
    status = counts(live)
    assert status["decisions"] >= 1 and status["duplicates"] >= 1
    assert set(status) >= {
        "decisions",
        "feedbacks",
        "updates",
        "pending",
        "late",
        "duplicates",
        "version",
    }
    # linucb's first round: the arm of largest norm, untied, so played with probability 1
    deterministic = post(
        live, "/v1/policies/open/decide", {"context": {"arms": ARMS}}, {}
    )
    assert (
        deterministic.status_code == 200 and deterministic.json()["propensity"] == 1.0
    )


def test_tokens(live):
    body = {"context": {"arms": ARMS}}
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
        r = post(live, "/v1/policies/rec/decide", body, headers)
        assert r.status_code == 401
        assert r.headers["www-authenticate"] == "Bearer"
        assert TOKEN not in r.text
    assert live.client.get("/v1/policies/rec").status_code == 401
    bad_json_no_token = live.client.post("/v1/policies/rec/decide", content=b"{")
    assert bad_json_no_token.status_code == 401  # the token is checked first


def test_unknown_policy_route_and_method(live):
    r = post(live, "/v1/policies/nope/decide", {"context": {"arms": ARMS}})
    assert r.status_code == 404 and "nope" in r.json()["detail"]
    assert live.client.get("/v1/policies/rec/decide", headers=AUTH).status_code == 405
    assert live.client.get("/nothing").status_code == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "context"),
        ({"context": {}}, "context.arms"),
        ({"context": {"arms": []}}, "context.arms"),
        ({"context": {"arms": [["1", 2, 3]]}}, "context.arms.0.0"),
        ({"context": {"arms": [[True, 2, 3]]}}, "context.arms.0.0"),
        ({"context": {"arms": [[1, 2], [3]]}}, "context"),
        ({"context": {"arms": [[1, 2, 3]]}, "colour": 1}, "colour"),
        ({"context": {"arms": ARMS}, "event_id": ""}, "event_id"),
        ({"context": {"arms": ARMS}, "event_id": "a b"}, "event_id"),
        ({"context": {"arms": ARMS}, "event_id": "x" * 129}, "event_id"),
        ({"context": {"arms": ARMS}, "event_id": 5}, "event_id"),
        ({"context": {"arms": [[0.0] * 7] * 2}}, "context.arms: at most 6 features"),
        ({"context": {"arms": [[0.0, 1.0, 2.0]] * 9}}, "context.arms: at most 8 arms"),
        ({"context": {"arms": [[0.0, 1.0]] * 4}}, "context.arms: each arm must have 3"),
        ({"context": {"arms": ARMS, "max_size": 0}}, "context.max_size"),
    ],
)
def test_bad_decide_bodies_are_422_naming_the_field(live, body, field):
    post(live, "/v1/policies/rec/decide", {"context": {"arms": ARMS}})  # fixes d = 3
    before = counts(live)["decisions"]
    r = post(live, "/v1/policies/rec/decide", body)
    assert r.status_code == 422, r.text
    assert field in r.json()["detail"]
    assert counts(live)["decisions"] == before


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        (b"{", "body: not valid JSON"),
        (b'{"context": {"arms": [[NaN, 1, 2]]}}', "context.arms.0.0"),
        (b'{"context": {"arms": [[1e999, 1, 2]]}}', "context.arms.0.0"),
        (b'{"event_id": "a1", "feedback": "1"}', "feedback"),
        (b'{"event_id": "a1", "feedback": true}', "feedback"),
        (b'{"event_id": "a1", "feedback": NaN}', "feedback"),
        (b'{"feedback": 1}', "event_id"),
        (b"[]", "body"),
    ],
)
def test_malformed_bodies(live, raw, field):
    path = "/v1/policies/rec/" + ("feedback" if b"feedback" in raw else "decide")
    r = live.client.post(
        path, content=raw, headers={**AUTH, "Content-Type": "application/json"}
    )
    assert r.status_code == 422, r.text
    assert field in r.json()["detail"]


def test_body_size_limit(live):
    big = {"context": {"arms": ARMS}, "event_id": "b", "pad": "x" * 5000}
    assert post(live, "/v1/policies/rec/decide", big).status_code == 413

    def chunks():  # no Content-Length: counted while read
        yield b'{"context": {"arms": ' + b"[[1,2,3]," * 700

    r = live.client.post("/v1/policies/rec/decide", content=chunks(), headers=AUTH)
    assert r.status_code == 413 and "4096" in r.json()["detail"]


def test_health_openapi_metrics(live):
    assert live.client.get("/health").json()["status"] == "ok"
    schema = live.client.get("/openapi.json").json()
    decide = schema["paths"]["/v1/policies/{policy_id}/decide"]["post"]
    assert decide["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/DecideIn"
    }
    assert {"DecideIn", "ContextIn", "DecideOut", "FeedbackIn", "FeedbackOut"} <= set(
        schema["components"]["schemas"]
    )
    post(live, "/v1/policies/rec/decide", {"context": {"arms": ARMS}})
    text = live.client.get("/metrics").text
    assert 'banditkit_serve_decisions_total{policy="rec"}' in text
    assert "banditkit_serve_request_seconds_bucket" in text
    assert (
        'endpoint="decide"' in text and "banditkit_serve_commit_seconds_count" in text
    )
    assert TOKEN not in text


def test_an_unexpected_error_is_a_500_and_the_service_goes_on(live, monkeypatch):
    """The guard answers decide and feedback in front of FastAPI: it catches what breaks."""

    async def broken(*args, **kwargs):
        raise RuntimeError("boom")

    before = live.client.get("/metrics").text
    monkeypatch.setattr(live.service, "ask", broken)
    r = post(live, "/v1/policies/rec/decide", {"context": {"arms": ARMS}})
    assert r.status_code == 500 and r.json() == {"detail": "internal error"}
    assert "boom" not in r.text
    monkeypatch.undo()
    text = live.client.get("/metrics").text
    line = 'banditkit_serve_requests_total{code="500",endpoint="decide",policy="rec"}'
    assert line not in before and f"{line} 1.0" in text
    ok = post(live, "/v1/policies/rec/decide", {"context": {"arms": ARMS}})
    assert ok.status_code == 200


def test_a_shed_request_is_a_503_with_retry_after(live, monkeypatch):
    from banditkit.serve.state import ServeError

    if live.mode == "process":  # the refusal is the writer's (another process)
        pytest.skip("Service._refusal runs in the writer process")

    monkeypatch.setattr(
        live.service, "_refusal", lambda: ServeError(503, "the service is overloaded")
    )
    r = post(live, "/v1/policies/rec/feedback", {"event_id": "a1", "feedback": 1})
    assert r.status_code == 503 and r.headers["retry-after"] == "1"
    assert "overloaded" in r.json()["detail"]


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.floats(allow_nan=False)
    | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                ["context", "arms", "event_id", "feedback", "revenues", "max_size", "x"]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=20,
)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(body=json_values, endpoint=st.sampled_from(["decide", "feedback"]))
def test_any_body_is_answered_without_harm(live, body, endpoint):
    before = counts(live)
    r = live.client.post(
        f"/v1/policies/rec/{endpoint}", content=json.dumps(body), headers=AUTH
    )
    assert r.status_code < 500, r.text
    after = counts(live)
    if r.status_code != 200:
        assert r.status_code in (404, 409, 422) and r.json()["detail"]
        assert after["decisions"] == before["decisions"]
        assert after["feedbacks"] == before["feedbacks"]


def test_freeze_gc_moves_the_start_up_out_of_full_collections(tmp_path):
    """``freeze_gc`` (set by ``banditkit serve run``) freezes what lives at start-up, and
    every collection of the garbage collector is timed in ``/metrics``."""
    import gc

    from starlette.testclient import TestClient

    from banditkit.serve.app import create_app

    service = open_service(CONFIG, f"sqlite:///{tmp_path / 'e.db'}")
    assert gc.get_freeze_count() == 0
    callbacks = list(gc.callbacks)
    try:
        with TestClient(create_app(service, {"rec": TOKEN}, freeze_gc=True)) as client:
            frozen = gc.get_freeze_count()
            assert (
                frozen > 1000
            )  # the interpreter's start-up: modules, classes, policies
            gc.collect()
            text = client.get("/metrics").text
            line = next(
                row
                for row in text.splitlines()
                if row.startswith(
                    'banditkit_serve_gc_pause_seconds_count{generation="2"}'
                )
            )
            assert float(line.split()[-1]) >= 1.0
        # frozen objects are still freed when their last reference goes (the app's own)
        assert 0 < frozen - gc.get_freeze_count() < frozen // 10
    finally:
        gc.unfreeze()
    assert gc.callbacks == callbacks  # a stopped app no longer times collections
