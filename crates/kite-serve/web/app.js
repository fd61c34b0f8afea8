// The browser side of `kite serve`'s chat page: lists stored conversations, picks a model,
// sends a prompt to POST /api/chat and draws the answer as its server-sent events arrive.
// Plain script, no build step, no external resources, nothing inline (the page's CSP forbids it).
// Model text reaches the page as HTML only through the Markdown renderer (md(), or the answer's
// drawer() as it streams), which escapes all HTML first (escaped()) and then adds a few
// Markdown tags of its own; links are made only for http(s) and mailto URLs.
'use strict';

const $ = (sel) => document.querySelector(sel);
const list = $('#conversations'), messages = $('#messages'), errorBox = $('#error');
const modelSelect = $('#model'), prompt = $('#prompt'), sendButton = $('#send'), stopButton = $('#stop');
const keyForm = $('#key-form'), keyInput = $('#key');

let key = sessionStorage.getItem('kite-key') || '';
let current = null; // id of the conversation shown, null for a new one
let controller = null; // aborts the running chat request
let running = null; // promise of the running send()

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text != null) e.textContent = text;
  return e;
}

// ---- Markdown: escape first, then add our own tags ----
// Everything here takes time linear in the text: an answer can be long, and one hostile line
// must not hang the page. So no regex here reads the same stretch of a line again for each
// of many starts (links and emphasis are found by hand for that), and none can split a run
// of characters between two quantifiers in more than a few ways.

const ESC = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
// In HEADING and LIST, (?!\s) keeps \s+ from giving spaces back to .* (which stops at a
// \u2028 or \u2029): each way of splitting a long run of spaces would be tried in turn.
const FENCE = /^\s*```+\s*([^\s`]*)/, FENCE_END = /^\s*```+\s*$/, HEADING = /^\s*(#{1,6})\s+(?!\s)(.*)$/;
const HR = /^\s*([-*_])(\s*\1){2,}\s*$/, QUOTE = /^\s*&gt; ?(.*)$/, LIST = /^\s*([-*+]|\d{1,9}[.)])\s+(?!\s)(.*)$/;
// `|--|:-:|`, with spaces anywhere: each run of spaces has one quantifier of its own.
const DELIMITER = /^\s*(\|\s*)?:?-+:?\s*(\|\s*:?-+:?\s*)*(\|\s*)?$/;
const LINE_BREAK = /\r\n?|\n/, LINE_BREAKS = /\r\n?|\n/g;
const starts = (line) => [FENCE, HEADING, HR, QUOTE, LIST].some((re) => re.test(line));
// A table: a row of cells, then the row of dashes under it.
const tableAt = (lines, i) => lines[i].includes('|') && i + 1 < lines.length && DELIMITER.test(lines[i + 1]);
// At most this many columns; more are joined into the last.
const MAX_COLUMNS = 64;

function cells(line) {
  let row = line.trim();
  if (row.startsWith('|')) row = row.slice(1);
  if (row.endsWith('|')) row = row.slice(0, -1);
  const all = row.split('|').map((c) => c.trim());
  return all.length > MAX_COLUMNS ? [...all.slice(0, MAX_COLUMNS - 1), all.slice(MAX_COLUMNS - 1).join(' | ')] : all;
}

function table(lines, i) {
  const head = cells(lines[i]);
  const align = cells(lines[i + 1]).map((d) => (d.endsWith(':') ? (d.startsWith(':') ? 'center' : 'right') : ''));
  const cell = (tag, text, n) => `<${tag}${align[n] ? ` class="align-${align[n]}"` : ''}>${inline(text || '')}</${tag}>`;
  const rows = [];
  for (i += 2; i < lines.length && lines[i].trim() && lines[i].includes('|'); i++) {
    const row = cells(lines[i]);
    rows.push(`<tr>${head.map((_, n) => cell('td', row[n], n)).join('')}</tr>`);
  }
  const html = `<table><thead><tr>${head.map((h, n) => cell('th', h, n)).join('')}</tr></thead>`
    + `<tbody>${rows.join('')}</tbody></table>`;
  return [html, i];
}

// Model text with all HTML escaped (and our placeholder characters dropped), character by
// character: the escaped text of a whole answer is the escaped texts of its deltas, joined.
const escaped = (text) => String(text).replace(/[\u0000-\u0002]/g, '').replace(/[&<>"']/g, (c) => ESC[c]);

function md(src) {
  return blocks(escaped(src).split(LINE_BREAK), 0).join('');
}

// Where line `n` of `text` starts.
function lineStart(text, n) {
  LINE_BREAKS.lastIndex = 0;
  while (n-- > 0) LINE_BREAKS.exec(text);
  return LINE_BREAKS.lastIndex;
}

// Quotes nest at most this deep; deeper `>` are text (a hostile answer cannot exhaust the stack).
const MAX_QUOTE_DEPTH = 8;

// The HTML of each block of `lines`, in order. When `stops` is given, it gets [i, n] for each
// line i the loop below starts at, n being the number of blocks before it. Those blocks were
// decided by the lines up to i + 1 at most (a paragraph looks at the line after the one that
// ends it, for a table), and are what lines.slice(0, i) alone gives; the rest is what
// lines.slice(i) alone gives (nothing looks back).
function blocks(lines, depth, stops) {
  const out = [];
  for (let i = 0, m; i < lines.length;) {
    if (stops) stops.push([i, out.length]);
    const line = lines[i];
    if ((m = FENCE.exec(line))) {
      const code = [];
      for (i++; i < lines.length && !FENCE_END.test(lines[i]); i++) code.push(lines[i]);
      i++;
      const lang = m[1].replace(/[^\w+#.-]/g, '');
      out.push(`<pre><code${lang ? ` class="language-${lang}"` : ''}>${code.join('\n')}</code></pre>`);
    } else if (!line.trim()) {
      i++;
    } else if (tableAt(lines, i)) {
      const [html, next] = table(lines, i);
      out.push(html);
      i = next;
    } else if ((m = HEADING.exec(line))) {
      const n = m[1].length;
      out.push(`<h${n}>${inline(m[2])}</h${n}>`);
      i++;
    } else if (HR.test(line)) {
      out.push('<hr>');
      i++;
    } else if (depth < MAX_QUOTE_DEPTH && QUOTE.test(line)) {
      const quoted = [];
      for (; i < lines.length && (m = QUOTE.exec(lines[i])); i++) quoted.push(m[1]);
      out.push(`<blockquote>${blocks(quoted, depth + 1).join('')}</blockquote>`);
    } else if ((m = LIST.exec(line))) {
      const ordered = /\d/.test(m[1]), items = [];
      for (; i < lines.length; i++) {
        const item = LIST.exec(lines[i]);
        if (item && /\d/.test(item[1]) === ordered) items.push(item[2]);
        else if (!item && /^\s+\S/.test(lines[i]) && !starts(lines[i])) items[items.length - 1] += ' ' + lines[i].trim();
        else break;
      }
      const tag = ordered ? 'ol' : 'ul', first = parseInt(m[1], 10);
      const start = ordered && first !== 1 ? ` start="${first}"` : '';
      out.push(`<${tag}${start}>${items.map((t) => `<li>${inline(t)}</li>`).join('')}</${tag}>`);
    } else {
      const para = [];
      do para.push(lines[i++].trim());
      while (i < lines.length && lines[i].trim() && !starts(lines[i]) && !tableAt(lines, i));
      out.push(`<p>${para.map(inline).join('<br>')}</p>`);
    }
  }
  return out;
}

// Code spans and links are set aside as \u0001n\u0002 so emphasis never reaches inside them.
function inline(s) {
  const kept = [];
  const keep = (html) => `\u0001${kept.push(html) - 1}\u0002`;
  s = s.replace(/`([^`]+)`/g, (_, code) => keep(`<code>${code}</code>`));
  s = links(s, (all, text, url) =>
    /^(https?:\/\/|mailto:)/i.test(url)
      ? keep(`<a href="${url}" target="_blank" rel="noopener noreferrer">${emphasis(text)}</a>`)
      : all);
  s = emphasis(s);
  while (/\u0001\d+\u0002/.test(s)) s = s.replace(/\u0001(\d+)\u0002/g, (_, n) => kept[n]);
  return s;
}

// After a link's text: `](url)`, the URL with no spaces and only balanced, unnested parentheses.
const LINK_END = /\]\(((?:[^()\s]|\([^()\s]*\))+)\)/y;

// What s.replace(/\[([^\]]+)\]\(((?:[^()\s]|\([^()\s]*\))+)\)/g, link) gives, in linear time:
// that regex reads from each `[` to the next `]`, again for each `[` before that `]`.
// A link's text runs from a `[` to the first `]` after it; when the `]` is not the start of a
// link's end, no `[` before it starts a link, so the search goes on after it.
function links(s, link) {
  let out = '', from = 0, close = -1;
  for (let open = s.indexOf('['); open >= 0; open = s.indexOf('[', open + 1)) {
    if (close < open) close = s.indexOf(']', open + 1);
    if (close < 0) break; // no `]` left: no link
    LINK_END.lastIndex = close;
    const m = close > open + 1 ? LINK_END.exec(s) : null;
    if (!m) {
      open = close;
      continue;
    }
    const end = LINK_END.lastIndex;
    out += s.slice(from, open) + link(s.slice(open, end), s.slice(open + 1, close), m[1]);
    from = end;
    open = from - 1;
  }
  return out + s.slice(from);
}

// What s.replace(/MARK(?=\S)(.*?\S)MARK/g, '<tag>$1</tag>') gives, or with `flanked`
// s.replace(/(^|\W)MARK(?=\S)(.*?\S)MARK(?!\w)/g, '$1<tag>$2</tag>'), in linear time: those
// regexes read from each opening mark to the end of the line when nothing closes it.
// Each opening mark takes the first closing mark after it, if no line break (which `.` does
// not match) comes between; when none closes it, none closes a later one either.
const LINE_END = /[\n\r\u2028\u2029]/g, SPACE = /\s/, WORD = /\w/;
function pair(s, mark, flanked, tag) {
  const n = mark.length;
  const opens = (i) => i + n < s.length && !SPACE.test(s[i + n]) && (!flanked || i === 0 || !WORD.test(s[i - 1]));
  const closes = (i) => !SPACE.test(s[i - 1]) && (!flanked || i + n === s.length || !WORD.test(s[i + n]));
  let out = '', from = 0, close = -1, end = -1;
  for (let open = s.indexOf(mark); open >= 0; open = s.indexOf(mark, open + 1)) {
    if (!opens(open)) continue;
    // The first closing mark with at least one character between: found again only once passed.
    if (close <= open + n) {
      close = s.indexOf(mark, open + n + 1);
      while (close >= 0 && !closes(close)) close = s.indexOf(mark, close + 1);
      if (close < 0) break;
    }
    // The first line break after the opening mark.
    if (end < open + n) {
      LINE_END.lastIndex = open + n;
      const m = LINE_END.exec(s);
      end = m ? m.index : s.length;
    }
    if (end < close) continue;
    out += `${s.slice(from, open)}<${tag}>${s.slice(open + n, close)}</${tag}>`;
    from = close + n;
    open = from - 1;
  }
  return out + s.slice(from);
}

// Bold, then italic, each with `*` then `_` (`_` only at the edges of words).
const emphasis = (s) => pair(pair(pair(pair(s, '**', false, 'strong'), '__', true, 'strong'), '*', false, 'em'), '_', true, 'em');

// ---- Talking to the server ----

async function api(path, options = {}) {
  const headers = Object.assign({}, options.headers);
  if (key) headers.Authorization = `Bearer ${key}`;
  let res;
  try {
    res = await fetch(path, Object.assign({}, options, { headers }));
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new Error(`Cannot reach the server (${e.message})`);
  }
  if (res.status === 401) {
    askForKey();
    throw Object.assign(new Error('This server needs an API key'), { status: 401, auth: true });
  }
  if (!res.ok) {
    let message = `${res.status} ${res.statusText}`.trim();
    try {
      const body = await res.json();
      if (body && body.error && body.error.message) message = body.error.message;
    } catch (_) { /* not JSON: keep the status line */ }
    throw Object.assign(new Error(message), { status: res.status });
  }
  return res;
}

const getJson = async (path) => (await api(path)).json();

function askForKey() {
  if (key) showError('The API key was not accepted');
  key = '';
  sessionStorage.removeItem('kite-key');
  keyForm.hidden = false;
  keyInput.focus();
}

function showError(e) {
  if (e && e.auth) return; // the key form says it
  errorBox.textContent = typeof e === 'string' ? e : (e && e.message) || String(e);
  errorBox.hidden = false;
}

const clearError = () => { errorBox.textContent = ''; errorBox.hidden = true; };

function setState(state) {
  document.body.dataset.state = state;
  sendButton.disabled = state !== 'idle';
  stopButton.disabled = state !== 'streaming';
}

// Reads a text/event-stream body, yielding [event, data] with data parsed as JSON.
async function* sse(body) {
  const reader = body.getReader(), decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    let text = buffer + decoder.decode(value || new Uint8Array(), { stream: !done }), held = '';
    if (!done && text.endsWith('\r')) [text, held] = [text.slice(0, -1), '\r']; // may be half of \r\n
    buffer = text.replace(/\r\n?/g, '\n');
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const event = parseEvent(buffer.slice(0, end));
      buffer = buffer.slice(end + 2);
      if (event) yield event;
    }
    buffer += held;
    if (done) {
      const event = parseEvent(buffer);
      if (event) yield event;
      return;
    }
  }
}

function parseEvent(block) {
  let name = 'message', data = [];
  for (const line of block.split('\n')) {
    if (!line || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') name = value;
    else if (field === 'data') data.push(value);
  }
  if (!data.length) return null;
  const text = data.join('\n');
  try { return [name, JSON.parse(text)]; } catch (_) { return [name, { text, message: text }]; }
}

// ---- Drawing ----

const scrollDown = () => { messages.scrollTop = messages.scrollHeight; };

function addMessage(role, text) {
  const message = el('div', `message ${role === 'user' ? 'user' : 'assistant'}`), content = el('div', 'content');
  if (role === 'user') content.textContent = text;
  else content.innerHTML = md(text);
  message.append(content);
  messages.append(message);
  return content;
}

function pretty(args) {
  if (typeof args === 'string') try { return JSON.stringify(JSON.parse(args), null, 2); } catch (_) { return args; }
  return JSON.stringify(args === undefined ? null : args, null, 2);
}

function addToolCall(call) {
  const box = el('div', 'tool-call pending'), head = el('div', 'head');
  head.append(el('span', 'label', 'tool'), el('span', 'name', call.name || 'tool'));
  box.append(head, el('pre', 'arguments', pretty(call.arguments)));
  messages.append(box);
  return box;
}

function addToolResult(box, result) {
  box.classList.remove('pending');
  const pre = el('pre', 'result', result.output == null ? '' : String(result.output));
  pre.classList.toggle('error', !!result.error);
  box.classList.toggle('failed', !!result.error);
  box.append(pre);
}

function addUsage(done) {
  const usage = done.usage || {}, parts = [];
  if (usage.input_tokens != null) parts.push(`${usage.input_tokens} in / ${usage.output_tokens || 0} out tokens`);
  if (typeof usage.cost === 'number') parts.push(`$${usage.cost === 0 ? '0' : usage.cost < 0.01 ? usage.cost.toPrecision(2) : usage.cost.toFixed(4)}`);
  if (done.stop && done.stop !== 'finished') parts.push(done.stop === 'cancelled' ? 'stopped' : `stop: ${done.stop}`);
  if (parts.length) messages.append(el('div', 'usage', parts.join(' · ')));
}

// Draws one answer: text after a tool call or result goes into a new assistant bubble.
// An answer can come in thousands of deltas, and drawing all of it again for each would take
// time quadratic in its length. So the blocks that more text cannot change are drawn once
// and kept; only the ones after them are drawn again, at most once a frame, and, as the last
// block grows and takes longer to draw, after a pause four times as long as the last drawing
// took (so drawing leaves the page free most of the time). The bubble ends up as md() of the
// whole text would draw it: flush() draws what is left at once.
function drawer() {
  const boxes = new Map();
  // The bubble, its escaped text after the blocks it keeps, how many nodes those are, whether
  // a drawing of the rest is queued, and how long the last drawing took (ms).
  let content = null, rest = '', kept = 0, queued = false, took = 0;
  function draw() {
    queued = false;
    if (!content) return;
    const started = performance.now();
    const lines = rest.split(LINE_BREAK), stops = [], html = blocks(lines, 0, stops);
    // The blocks before the last line a block starts at that is complete, with the line after
    // it (the last line may yet grow), are done.
    let line = 0, done = 0;
    for (const [i, n] of stops) if (i + 2 < lines.length) [line, done] = [i, n];
    while (content.childNodes.length > kept) content.lastChild.remove();
    if (done) {
      content.insertAdjacentHTML('beforeend', html.slice(0, done).join(''));
      kept = content.childNodes.length;
      rest = rest.slice(lineStart(rest, line));
    }
    content.insertAdjacentHTML('beforeend', html.slice(done).join(''));
    took = performance.now() - started;
  }
  const flush = () => { if (queued) draw(); };
  return {
    text(delta) {
      if (!content) [content, rest, kept, took] = [addMessage('assistant', ''), '', 0, 0];
      rest += escaped(delta);
      if (queued) return;
      queued = true;
      setTimeout(() => requestAnimationFrame(() => {
        if (!queued) return; // flushed already
        draw();
        scrollDown();
      }), 4 * took);
    },
    flush,
    call(call) { flush(); boxes.set(call.id, addToolCall(call)); content = null; },
    result(result) { flush(); addToolResult(boxes.get(result.id) || addToolCall(result), result); content = null; },
    cut() { flush(); content = null; },
  };
}

function markCurrent() {
  for (const li of list.children) li.classList.toggle('current', li.dataset.id === current);
}

// ---- Loading ----

async function loadModels() {
  const { data = [] } = await getJson('/v1/models');
  const wanted = modelSelect.value || localStorage.getItem('kite-model');
  modelSelect.replaceChildren(...data.map((m) => {
    const option = el('option', null, m.id);
    option.value = m.id;
    return option;
  }));
  if (data.some((m) => m.id === wanted)) modelSelect.value = wanted;
}

async function loadList() {
  const { conversations = [], stored = true } = await getJson('/api/conversations');
  document.body.classList.toggle('unstored', !stored);
  list.replaceChildren(...conversations.map((c) => {
    const li = el('li', 'conversation'), title = el('button', 'title', c.title || 'Untitled');
    const del = el('button', 'delete', '×');
    li.dataset.id = c.id;
    title.type = del.type = 'button';
    title.title = [c.model, c.updated_ms ? new Date(c.updated_ms).toLocaleString() : ''].filter(Boolean).join(' · ');
    del.title = 'Delete';
    del.setAttribute('aria-label', `Delete ${c.title || 'conversation'}`);
    li.append(title, del);
    return li;
  }));
  markCurrent();
}

async function load() {
  clearError();
  const results = await Promise.allSettled([loadModels(), loadList()]);
  const failed = results.filter((r) => r.status === 'rejected').map((r) => r.reason);
  if (failed.some((e) => e && e.auth)) return; // wait for the key
  failed.forEach(showError);
  setState('idle');
}

async function open(id) {
  const conversation = await getJson(`/api/conversations/${encodeURIComponent(id)}`);
  clearError();
  current = conversation.id;
  messages.replaceChildren();
  const turn = drawer();
  for (const message of conversation.messages || []) {
    turn.cut();
    for (const part of message.parts || []) {
      if (part.type === 'text' && message.role === 'user') addMessage('user', part.text);
      else if (part.type === 'text') turn.text(part.text);
      else if (part.type === 'tool_call') turn.call(part);
      else if (part.type === 'tool_result') turn.result(part);
    }
  }
  turn.flush();
  markCurrent();
  scrollDown();
}

function newChat() {
  current = null;
  messages.replaceChildren();
  clearError();
  markCurrent();
  prompt.focus();
}

async function remove(id) {
  if (id === current) await halt();
  let failure = null;
  try {
    await api(`/api/conversations/${encodeURIComponent(id)}`, { method: 'DELETE' });
  } catch (e) {
    failure = e;
  }
  if (id === current && (!failure || failure.status === 404)) newChat();
  await loadList();
  if (failure) throw failure;
}

// ---- Chatting ----

async function halt() {
  if (controller) controller.abort();
  if (running) await running;
}

async function send() {
  const text = prompt.value, model = modelSelect.value;
  if (!text.trim() || document.body.dataset.state !== 'idle') return;
  if (!model) return showError('No model to answer: the server offers none');
  clearError();
  prompt.value = '';
  const userMessage = addMessage('user', text).parentElement;
  const turn = drawer();
  let started = false;
  controller = new AbortController();
  setState('streaming');
  scrollDown();
  try {
    const res = await api('/api/chat', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ conversation: current, model, text }),
      signal: controller.signal,
    });
    started = true;
    for await (const [event, data] of sse(res.body)) {
      if (event === 'conversation') {
        current = data.id;
        markCurrent();
      } else if (event === 'text') {
        turn.text(data.text || '');
      } else if (event === 'tool_call') {
        turn.call(data);
      } else if (event === 'tool_result') {
        turn.result(data);
      } else if (event === 'error') {
        showError(data.message || 'The answer failed');
        messages.append(el('div', 'turn-error', data.message || 'The answer failed'));
      } else if (event === 'done') {
        addUsage(data);
      }
      scrollDown();
    }
  } catch (e) {
    if (e.name === 'AbortError') {
      messages.append(el('div', 'stopped', 'stopped'));
    } else {
      showError(e);
      if (!started) { // nothing was asked: give the prompt back
        userMessage.remove();
        if (!prompt.value) prompt.value = text;
      }
    }
  } finally {
    controller = null;
    turn.flush();
    setState('idle');
    scrollDown();
    loadList().catch(showError);
  }
}

// ---- Wiring ----

$('#composer').addEventListener('submit', (e) => {
  e.preventDefault();
  if (!running) running = send().finally(() => { running = null; });
});

prompt.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    $('#composer').requestSubmit();
  }
});

stopButton.addEventListener('click', () => { if (controller) controller.abort(); });

$('#new').addEventListener('click', () => halt().then(newChat).catch(showError));

modelSelect.addEventListener('change', () => localStorage.setItem('kite-model', modelSelect.value));

list.addEventListener('click', (e) => {
  const li = e.target.closest('li.conversation');
  if (!li) return;
  const id = li.dataset.id;
  if (e.target.closest('.delete')) remove(id).catch(showError);
  else if (e.target.closest('.title')) halt().then(() => open(id)).catch(showError);
});

keyForm.addEventListener('submit', (e) => {
  e.preventDefault();
  key = keyInput.value.trim();
  if (!key) return;
  sessionStorage.setItem('kite-key', key);
  keyInput.value = '';
  keyForm.hidden = true;
  load();
});

setState('loading');
load();
