// Loads trainsim's outputs with real Chromium consumers and prints what they
// found as JSON (the C++ scenario tests assert on it):
//   node check_outputs.mjs trace TRACE.json
//     Chrome DevTools' trace engine (the Performance panel's parser) parses
//     the trace: processes, threads, slices, flows. The raw events are read
//     too: thread names, counter tracks, and whether every flow's start and
//     end lie on a slice of their thread (a flow end a nanosecond after its
//     slice binds to nothing in Perfetto).
//   node check_outputs.mjs page PAGE.html [PLOT.svg ...]
//     Headless Chromium opens the page at 1400x1000 (console errors and page
//     errors are collected), measures what a reader sees without scrolling
//     (headings, table columns, text alignment), parses each SVG with its
//     XML parser, then opens each SVG on its own at 1400x1000 and measures
//     it (time axes, capacity line, rows, legend, labels).
//   TRAINSIM_SCREENSHOTS=DIR: also saves DIR/<file>.png of every page and SVG
//     as shown at 1400x1000 (what docs/ holds and what was reviewed).
// Exit status 0 when the consumer ran; 1 when it failed.
import fs from 'node:fs';
import path from 'node:path';
import {pathToFileURL} from 'node:url';

const kViewport = {width: 1400, height: 1000};

// "12.345" (microseconds, three decimals) -> 12345 nanoseconds, exactly.
function ns(ts) {
  const [whole, frac = ''] = String(ts).split('.');
  return BigInt(whole) * 1000n + BigInt((frac + '000').slice(0, 3));
}

function rawChecks(events) {
  const slices = new Map();  // "pid:tid" -> [[start, end], ...]
  const threadNames = [];
  const counters = new Set();
  for (const e of events) {
    if (e.ph === 'X') {
      const key = `${e.pid}:${e.tid}`;
      if (!slices.has(key)) slices.set(key, []);
      const start = ns(e.ts);
      slices.get(key).push([start, start + ns(e.dur)]);
    } else if (e.ph === 'M' && e.name === 'thread_name') {
      threadNames.push(e.args.name);
    } else if (e.ph === 'C') {
      counters.add(e.cat);
    }
  }
  const onSlice = e => (slices.get(`${e.pid}:${e.tid}`) || []).some(([a, b]) => a <= ns(e.ts) && ns(e.ts) <= b);
  let starts = 0, ends = 0, startsOff = 0, endsOff = 0;
  for (const e of events) {
    if (e.ph === 's') { ++starts; if (!onSlice(e)) ++startsOff; }
    if (e.ph === 'f') { ++ends; if (!onSlice(e)) ++endsOff; }
  }
  return {
    thread_names: threadNames,
    counter_categories: [...counters].sort(),
    flow_starts: starts,
    flow_ends: ends,
    flow_starts_off_their_slice: startsOff,
    flow_ends_off_their_slice: endsOff,
  };
}

async function checkTrace(file) {
  const {polyfillDOMRect} = await import('@paulirish/trace_engine/analyze-trace.mjs');
  const Trace = await import('@paulirish/trace_engine');
  polyfillDOMRect();
  const json = JSON.parse(fs.readFileSync(file, 'utf8'));
  const model = Trace.TraceModel.Model.createWithAllHandlers();
  await model.parse(json.traceEvents);
  const data = model.parsedTrace().data;
  let threads = 0, slices = 0;
  for (const process of data.Renderer.processes.values()) {
    threads += process.threads.size;
    for (const thread of process.threads.values()) slices += thread.entries.length;
  }
  const flows = data.Flows.flows;
  const byCat = cat => flows.filter(f => f[0].cat === cat).length;
  return {
    generic: data.Meta.traceIsGeneric,
    processes: data.Renderer.processes.size,
    threads,
    slices,
    flows: flows.length,
    p2p_flows: byCat('send'),
    collective_flows: byCat('collective'),
    process_names: [...data.Meta.processNames.values()].map(e => e.args.name),
    ...rawChecks(json.traceEvents),
  };
}

// What a reader of an SVG plot sees, measured in the browser (runs in the page).
function measureSvg() {
  const svg = document.querySelector('svg');
  const box = e => { const r = e.getBoundingClientRect(); return {left: r.left, top: r.top, right: r.right, bottom: r.bottom}; };
  const width = svg.width.baseVal.value, height = svg.height.baseVal.value;
  const texts = [...svg.querySelectorAll('text')];
  return {
    width, height,
    gpu_rows: svg.querySelectorAll('g.gpu-row').length,
    gpus_in_rows: [...svg.querySelectorAll('g.gpu-row')].reduce((n, g) => n + Number(g.dataset.gpus || 1), 0),
    rects: svg.querySelectorAll('rect').length,
    legend_entries: [...svg.querySelectorAll('g.legend-entry text')].map(t => t.textContent),
    time_axes: [...svg.querySelectorAll('g.time-axis')].map(box),
    capacity: [...svg.querySelectorAll('g.capacity')].map(box),
    memory_lines: svg.querySelectorAll('g.memory-line').length,
    stage_bars: svg.querySelectorAll('g.stage-bar').length,
    x_label: svg.querySelector('text.x-label')?.textContent,
    y_label: svg.querySelector('text.y-label')?.textContent,
    // Text that sticks out of the drawing (clipped when shown), as laid out
    // on the screen (rotated labels included).
    texts_outside: texts.filter(t => {
      const b = t.getBoundingClientRect(), s = svg.getBoundingClientRect();
      return b.left < s.left - 0.5 || b.right > s.right + 0.5 || b.top < s.top - 0.5 || b.bottom > s.bottom + 0.5;
    }).map(t => t.textContent.slice(0, 60)),
  };
}

// What a reader of an HTML page sees without scrolling (runs in the page).
function measurePage() {
  const tables = [...document.querySelectorAll('table')].map(t => {
    const heads = [...t.querySelectorAll('thead th, tr:first-child th')];
    const firstCell = t.querySelector('td');
    return {
      class: t.className,
      columns: heads.map(h => h.textContent),
      right_px: heads.length ? Math.max(...heads.map(h => h.getBoundingClientRect().right)) : 0,
      visible: !t.closest('details') || t.closest('details').open,
      first_cell_align: firstCell ? getComputedStyle(firstCell).textAlign : null,
    };
  });
  const body = getComputedStyle(document.body);
  return {
    title: document.title,
    svgs: document.querySelectorAll('svg').length,
    plots: document.documentElement.dataset.plots,
    gpu_rows: document.querySelectorAll('#gantt g.gpu-row').length,
    trace_link: document.getElementById('trace-link')?.getAttribute('href'),
    headings: [...document.querySelectorAll('h1, h2')].map(h => h.textContent),
    paragraph_align: [...document.querySelectorAll('p')].map(p => getComputedStyle(p).textAlign),
    body_align: body.textAlign,
    pre_blocks: document.querySelectorAll('pre').length,
    tables,
    scroll_width: document.documentElement.scrollWidth,
  };
}

async function checkPage(html, svgs) {
  const {chromium} = await import('playwright-core');
  const browser = await chromium.launch({
    executablePath: process.env.TRAINSIM_CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
           '--disable-component-update', '--disable-sync'],
  });
  const shots = process.env.TRAINSIM_SCREENSHOTS;
  const errors = [];
  try {
    const page = await browser.newPage({viewport: kViewport});
    page.on('console', m => { if (m.type() === 'error') errors.push(`console: ${m.text()}`); });
    page.on('pageerror', e => errors.push(`page: ${e.message}`));
    // The page links to the trace and to ui.perfetto.dev but loads nothing.
    page.on('requestfailed', r => errors.push(`request failed: ${r.url()}`));
    await page.goto(pathToFileURL(path.resolve(html)).href, {waitUntil: 'load'});
    if (shots) await page.screenshot({path: path.join(shots, path.basename(html) + '.png')});
    const result = {errors, html: await page.evaluate(measurePage), svgs: []};
    for (const file of svgs) {
      const text = fs.readFileSync(file, 'utf8');
      const parsed = await page.evaluate(source => {
        const doc = new DOMParser().parseFromString(source, 'image/svg+xml');
        return {parse_errors: doc.getElementsByTagName('parsererror').length, root: doc.documentElement.nodeName};
      }, text);
      const own = await browser.newPage({viewport: kViewport});
      await own.goto(pathToFileURL(path.resolve(file)).href, {waitUntil: 'load'});
      if (shots) await own.screenshot({path: path.join(shots, path.basename(file) + '.png')});
      result.svgs.push({file: path.basename(file), bytes: text.length, ...parsed, ...await own.evaluate(measureSvg)});
      await own.close();
    }
    return result;
  } finally {
    await browser.close();
  }
}

const [mode, ...files] = process.argv.slice(2);
try {
  let result;
  if (mode === 'trace' && files.length === 1) result = await checkTrace(files[0]);
  else if (mode === 'page' && files.length >= 1) result = await checkPage(files[0], files.slice(1));
  else throw new Error('usage: check_outputs.mjs trace TRACE.json | page PAGE.html [PLOT.svg ...]');
  console.log(JSON.stringify(result));
} catch (e) {
  console.error(e.stack || String(e));
  process.exit(1);
}
