#!/usr/bin/env python3
"""N workers of chat completions through the official openai package, its retries as shipped.

Usage: workers.py BASE_URL WORKERS JOBS

Each worker takes the next job and makes one `client.chat.completions.create` call for it with
the SDK's defaults (max_retries = 2, its own backoff, Retry-After honoured); a call that
raises after its retries is a failed job. The call is tagged with its job (`x-simbench-job`,
sent on every try) so that the server's request log has the load; the attempt comes from the
SDK's own `x-stainless-retry-count`. The package's own HTTP client (`openai.DefaultHttpxClient`) is given event hooks that
count every request it sends and every 429 it receives, so the retries are seen from the
client's side. Prints one JSON object: jobs_done, jobs_failed, requests, rate_limited, retries,
errors (exception class → count), openai_version.
"""

import json
import sys
import threading

import openai


def main():
    base_url, workers, jobs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    lock = threading.Lock()
    counts = {"jobs_done": 0, "jobs_failed": 0, "requests": 0, "rate_limited": 0}
    errors = {}
    next_job = [0]

    def on_request(request):
        with lock:
            counts["requests"] += 1

    def on_response(response):
        if response.status_code == 429:
            with lock:
                counts["rate_limited"] += 1

    http_client = openai.DefaultHttpxClient(
        event_hooks={"request": [on_request], "response": [on_response]}
    )
    client = openai.OpenAI(base_url=base_url, api_key="sk-simbench", http_client=http_client)

    def worker():
        while True:
            with lock:
                if next_job[0] >= jobs:
                    return
                job = next_job[0]
                next_job[0] += 1
            try:
                client.chat.completions.create(
                    model="simulated",
                    messages=[{"role": "user", "content": "Say something."}],
                    max_tokens=16,
                    extra_headers={"x-simbench-job": str(job)},
                )
                outcome = "jobs_done"
            except openai.OpenAIError as e:
                outcome = "jobs_failed"
                with lock:
                    errors[type(e).__name__] = errors.get(type(e).__name__, 0) + 1
            with lock:
                counts[outcome] += 1

    threads = [threading.Thread(target=worker) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    counts["retries"] = counts["requests"] - jobs
    counts["errors"] = errors
    counts["openai_version"] = openai.__version__
    print(json.dumps(counts))


if __name__ == "__main__":
    main()
