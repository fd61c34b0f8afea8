"""The official OpenAI Python SDK's streaming path, for kite-bench's `peers` benchmark.

Run by the benchmark as `python openai_sdk.py BASE_URL CONCURRENCY COUNT SECONDS EXPECTED`:
after a warm-up of half a second, CONCURRENCY loops on one `AsyncOpenAI` client each send
one `chat.completions.create(stream=True)` after the other, read the chunks, join the text
deltas and check the text is EXPECTED, until SECONDS have passed or COUNT requests were
started. Prints one line of JSON: completions, failures, seconds to the last answer, the
median time to the first text delta (us), the first error, the peak RSS (VmHWM, KiB) and
the CPU time of the measured run (user and system, seconds).

The client is the SDK's default but for its connection limits, raised to CONCURRENCY so
that that many streams can be open at once (the default allows 1,000 connections but keeps
only 100 alive between requests).
"""

import asyncio
import json
import resource
import sys
import time

import openai

MODEL = "gpt-5-nano"
PROMPT = "Count from 1 to 3, one number a line."
WARM_UP = 0.5


async def once(client, expected):
    started = time.perf_counter()
    stream = await client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": PROMPT}], stream=True
    )
    first = None
    text = []
    async for chunk in stream:
        for choice in chunk.choices:
            delta = choice.delta.content
            if delta:
                if first is None:
                    first = time.perf_counter() - started
                text.append(delta)
    text = "".join(text)
    if text != expected or first is None:
        raise ValueError(f"the text was {text!r}, not {expected!r}")
    return first


async def loops(client, expected, concurrency, count, until):
    started = 0
    ttft, failed, errors = [], 0, []

    async def loop():
        nonlocal started, failed
        while time.perf_counter() < until and started < count:
            started += 1
            try:
                ttft.append(await once(client, expected))
            except Exception as e:  # noqa: BLE001 - every failure is counted
                failed += 1
                errors.append(f"{type(e).__name__}: {e}")

    await asyncio.gather(*(loop() for _ in range(concurrency)))
    return ttft, failed, errors


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def peak_rss_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return None


async def main():
    base, concurrency, count, seconds, expected = sys.argv[1:6]
    concurrency, count, seconds = int(concurrency), int(count), float(seconds)
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    # The SDK's own limits type (from whichever httpx it is built on), raised.
    limits = type(openai._constants.DEFAULT_CONNECTION_LIMITS)(
        max_connections=max(concurrency, 1000),
        max_keepalive_connections=max(concurrency, 100),
    )
    http = openai.DefaultAsyncHttpxClient(limits=limits)
    client = openai.AsyncOpenAI(base_url=base, api_key="sk-bench", http_client=http)
    _, warm_failed, warm_errors = await loops(
        client, expected, concurrency, 1 << 62, time.perf_counter() + WARM_UP
    )
    cpu = cpu_seconds()
    start = time.perf_counter()
    ttft, failed, errors = await loops(client, expected, concurrency, count, start + seconds)
    elapsed = time.perf_counter() - start
    cpu = cpu_seconds() - cpu
    ttft.sort()
    errors += warm_errors
    print(
        json.dumps(
            {
                "completions": len(ttft),
                "failed": failed + warm_failed,
                "seconds": elapsed,
                "ttft_p50_us": ttft[len(ttft) // 2] * 1e6 if ttft else None,
                "error": errors[0] if errors else None,
                "peak_rss_kb": peak_rss_kb(),
                "cpu_seconds": cpu,
            }
        )
    )


asyncio.run(main())
