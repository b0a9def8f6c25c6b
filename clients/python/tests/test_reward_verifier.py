"""The opt-in verifier path of compute_score (issue 45, item 3): an output the rules leave undecided
is asked of the feeder's /v1/reward when verifier_url (or BIOALCHEMY_REWARD_VERIFIER_URL) is set; a
decided one never is; a feeder that does not answer leaves the local verdict. A stub stands for the
feeder here; the feeder's own verifier is tested in test/unit/reward-verifier.test.ts."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from bioalchemy_client.reward import compute_score, read_answer

GT = {"answer": "adjacent to the epidermis", "kind": "free-form", "options": [], "aliases": []}
BY_MEANING = "Looking at the tissue layers, the hypodermis lies directly beneath the epidermis."


@pytest.fixture()
def feeder():
    asked = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            asked.append((self.path, body))
            data = json.dumps({"score": 1, "reason": "verifier: the answer states the reference",
                               "decidedBy": "verifier"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", asked
    server.shutdown()
    server.server_close()


def test_undecided_is_the_rules_no_candidate_state():
    assert read_answer("free-form", GT["answer"], BY_MEANING)[1] == BY_MEANING
    assert read_answer("free-form", GT["answer"], "The answer is adjacent to the epidermis.")[1] is None
    assert read_answer("free-form", GT["answer"], "")[1] is None


def test_default_is_local_and_unchanged(monkeypatch):
    monkeypatch.delenv("BIOALCHEMY_REWARD_VERIFIER_URL", raising=False)
    assert compute_score("bioalchemy", BY_MEANING, GT) == 0.0


def test_an_undecided_output_is_asked_of_the_feeder(feeder):
    url, asked = feeder
    assert compute_score("bioalchemy", BY_MEANING, GT, {"question": "Where is the hypodermis?"},
                         verifier_url=url) == 1.0
    assert len(asked) == 1
    path, body = asked[0]
    assert path == "/v1/reward"
    assert body == {"kind": "free-form", "ground_truth": GT["answer"], "options": [], "aliases": [],
                    "output": BY_MEANING, "question": "Where is the hypodermis?"}


def test_a_decided_output_is_never_asked(feeder, monkeypatch):
    url, asked = feeder
    monkeypatch.setenv("BIOALCHEMY_REWARD_VERIFIER_URL", url)
    assert compute_score("bioalchemy", "The answer is adjacent to the epidermis.", GT) == 1.0
    assert compute_score("bioalchemy", "It is not adjacent to the epidermis.", GT) == 0.0
    mcq = {"answer": "C", "kind": "mcq", "options": ["a", "b", "c", "d"], "aliases": []}
    assert compute_score("bioalchemy", "The answer is B.", mcq) == 0.0
    assert asked == []


def test_a_feeder_that_does_not_answer_leaves_the_local_verdict():
    # Nothing listens on port 9 (discard) on loopback: refused at once.
    assert compute_score("bioalchemy", BY_MEANING, GT, verifier_url="http://127.0.0.1:9",
                         verifier_timeout_s=2) == 0.0
