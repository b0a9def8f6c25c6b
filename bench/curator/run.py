"""The LLM bench's workload through bespoke curator (PyPI bespokelabs-curator), for comparison.

    .deploy/bench-venv/bin/python bench/curator/run.py --url http://127.0.0.1:PORT/v1 --n 1920 --concurrency 64

(the venv: python3 -m venv .deploy/bench-venv && .deploy/bench-venv/bin/pip install -r bench/curator/requirements.txt)

Sends n structured-output chat completions (the prompt shape of bench/llm.ts) to an
OpenAI-compatible server through curator's online OpenAI backend, C in flight, rate limits far
above what the server can serve, caching in a fresh temporary directory so every request is sent.
Prints one line, CURATOR_RESULT and JSON: the achieved rate in steady state, measured as
bench/llm.ts measures its own (the n - 2C completions after the C-th up to the (n - C)-th, over
the time between those two, from the finished_at curator records per response), and the whole
run's wall time (curator's set-up and the dataset it builds included).
"""

import argparse
import glob
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import time
from datetime import datetime

parser = argparse.ArgumentParser()
parser.add_argument("--url", required=True)
parser.add_argument("--n", type=int, required=True)
parser.add_argument("--concurrency", type=int, default=64)
parser.add_argument("--offset", type=int, default=0, help="first passage number, so repeated runs differ")
args = parser.parse_args()

cache = tempfile.mkdtemp(prefix="curator-bench-")
# tiktoken fetches its encodings from the internet unless cached; litellm (a curator dependency)
# ships cl100k_base, under the name tiktoken's cache gives it.
litellm_dir = importlib.util.find_spec("litellm").submodule_search_locations[0]
# Before curator is imported: no telemetry or viewer (nothing outside is reachable), no rich
# console, no remote model cost map, caching only in the fresh directory.
os.environ.update(
    {
        "CURATOR_CACHE_DIR": cache,
        "TELEMETRY_ENABLED": "false",
        "CURATOR_DISABLE_RICH_DISPLAY": "1",
        "BESPOKE_CURATOR_TRACKER_DISABLED": "1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "OPENAI_API_KEY": "bench",
        "TIKTOKEN_CACHE_DIR": os.path.join(litellm_dir, "litellm_core_utils", "tokenizers"),
    }
)

import logging  # noqa: E402

from datasets import Dataset  # noqa: E402
from pydantic import BaseModel, Field  # noqa: E402

from bespokelabs import curator  # noqa: E402

logging.getLogger("bespokelabs").setLevel(logging.WARNING)


class Reply(BaseModel):
    relevant: bool
    reason: str = Field(max_length=40)
    score: float = Field(ge=0, le=1)


class Relevance(curator.LLM):
    response_format = Reply

    def prompt(self, row):
        return [
            {"role": "system", "content": "Is the passage relevant to biology? Answer in JSON."},
            {
                "role": "user",
                "content": f"Passage {row['i']}: the Krebs cycle oxidises acetyl-CoA in the mitochondrial matrix.",
            },
        ]

    def parse(self, row, response):
        return {"i": row["i"], "relevant": response.relevant}


llm = Relevance(
    model_name="bench",
    backend="openai",
    backend_params={
        "base_url": args.url,
        "api_key": "bench",
        "max_concurrent_requests": args.concurrency,
        "max_requests_per_minute": 10_000_000,
        "max_tokens_per_minute": 10_000_000_000,
        "max_retries": 0,
        "require_all_responses": True,
    },
)
rows = Dataset.from_list([{"i": args.offset + i} for i in range(args.n)])
wall = time.time()
result = llm(rows)
wall = time.time() - wall
if len(result.dataset) != args.n:
    sys.exit(f"curator returned {len(result.dataset)} rows of {args.n}")

finished = []
for path in glob.glob(os.path.join(cache, "**", "responses_*.jsonl"), recursive=True):
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if r.get("response_errors"):
                sys.exit(f"a request failed: {r['response_errors']}")
            finished.append(datetime.fromisoformat(r["finished_at"]).timestamp())
if len(finished) != args.n:
    sys.exit(f"found {len(finished)} responses of {args.n} in {cache}")
shutil.rmtree(cache, ignore_errors=True)
finished.sort()
c = args.concurrency
steady = (args.n - 2 * c) / (finished[args.n - c - 1] - finished[c - 1])
print("CURATOR_RESULT " + json.dumps({"achieved": steady, "n": args.n, "wall_s": wall, "overall": args.n / wall}))
