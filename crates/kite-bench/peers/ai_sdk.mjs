// The Vercel AI SDK's streaming path on Node, for kite-bench's `peers` benchmark.
//
// Run by the benchmark as `node ai_sdk.mjs BASE_URL CONCURRENCY COUNT SECONDS EXPECTED`,
// from a copy in the folder where scripts/peers-setup.sh installed `ai` and
// `@ai-sdk/openai` (ES modules resolve packages from the script's own folder): after a
// warm-up of half a second, CONCURRENCY loops each call `streamText` on
// `createOpenAI({ baseURL, apiKey }).chat(model)` (Chat Completions) one after the other,
// read `textStream`, join the deltas and check the text is EXPECTED, until SECONDS have
// passed or COUNT calls were started. Prints one line of JSON: completions, failures,
// seconds to the last answer, the median time to the first text delta (us), the first
// error, the peak RSS (VmHWM, KiB) and the CPU time of the measured run (user and
// system, seconds). Node's fetch (undici) puts no limit on connections.
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { createOpenAI } from '@ai-sdk/openai';
import { streamText } from 'ai';

const MODEL = 'gpt-5-nano';
const PROMPT = 'Count from 1 to 3, one number a line.';
const WARM_UP_MS = 500;

globalThis.AI_SDK_LOG_WARNINGS = false;

const [base, concurrencyArg, countArg, secondsArg, expected] = process.argv.slice(2);
const concurrency = Number(concurrencyArg);
const count = Number(countArg);
const seconds = Number(secondsArg);
const model = createOpenAI({ baseURL: base, apiKey: 'sk-bench' }).chat(MODEL);

async function once() {
  const started = performance.now();
  let error;
  const result = streamText({
    model,
    prompt: PROMPT,
    onError: ({ error: e }) => {
      error = e;
    },
  });
  let first;
  let text = '';
  for await (const delta of result.textStream) {
    if (first === undefined) first = performance.now() - started;
    text += delta;
  }
  if (error !== undefined) throw error;
  if (text !== expected || first === undefined) {
    throw new Error(`the text was ${JSON.stringify(text)}, not ${JSON.stringify(expected)}`);
  }
  return first;
}

async function loops(count, until) {
  let started = 0;
  let failed = 0;
  const ttft = [];
  const errors = [];
  async function loop() {
    while (performance.now() < until && started < count) {
      started += 1;
      try {
        ttft.push(await once());
      } catch (e) {
        failed += 1;
        errors.push(String(e));
      }
    }
  }
  await Promise.all(Array.from({ length: concurrency }, loop));
  return { ttft, failed, errors };
}

function peakRssKb() {
  const line = readFileSync('/proc/self/status', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmHWM:'));
  return line ? Number(line.split(/\s+/)[1]) : null;
}

const warm = await loops(Infinity, performance.now() + WARM_UP_MS);
const cpu = process.cpuUsage();
const start = performance.now();
const run = await loops(count, start + seconds * 1000);
const elapsed = (performance.now() - start) / 1000;
const used = process.cpuUsage(cpu);
run.ttft.sort((a, b) => a - b);
const errors = run.errors.concat(warm.errors);
console.log(
  JSON.stringify({
    completions: run.ttft.length,
    failed: run.failed + warm.failed,
    seconds: elapsed,
    ttft_p50_us: run.ttft.length ? run.ttft[run.ttft.length >> 1] * 1000 : null,
    error: errors.length ? errors[0] : null,
    peak_rss_kb: peakRssKb(),
    cpu_seconds: (used.user + used.system) / 1e6,
  }),
);
