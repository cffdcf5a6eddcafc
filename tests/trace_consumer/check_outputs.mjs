// Loads trainsim's outputs with real Chromium consumers and prints what they
// found as JSON (the C++ scenario tests assert on it):
//   node check_outputs.mjs trace TRACE.json
//     Chrome DevTools' trace engine (the Performance panel's parser) parses
//     the trace: processes, threads, slices, flows.
//   node check_outputs.mjs page REPORT.html [PLOT.svg ...]
//     Headless Chromium opens the page (console errors and page errors are
//     collected) and parses each SVG with its XML parser.
// Exit status 0 when the consumer ran; 1 when it failed.
import fs from 'node:fs';
import path from 'node:path';
import {pathToFileURL} from 'node:url';

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
  };
}

async function checkPage(html, svgs) {
  const {chromium} = await import('playwright-core');
  const browser = await chromium.launch({
    executablePath: process.env.TRAINSIM_CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
           '--disable-component-update', '--disable-sync'],
  });
  const errors = [];
  try {
    const page = await browser.newPage();
    page.on('console', m => { if (m.type() === 'error') errors.push(`console: ${m.text()}`); });
    page.on('pageerror', e => errors.push(`page: ${e.message}`));
    // The page links to the trace and to ui.perfetto.dev but loads nothing.
    page.on('requestfailed', r => errors.push(`request failed: ${r.url()}`));
    await page.goto(pathToFileURL(path.resolve(html)).href, {waitUntil: 'load'});
    const result = {errors, html: await page.evaluate(() => ({
      title: document.title,
      svgs: document.querySelectorAll('svg').length,
      plots: document.documentElement.dataset.plots,
      gpu_rows: document.querySelectorAll('#gantt g.gpu-row').length,
      trace_link: document.getElementById('trace-link')?.getAttribute('href'),
    })), svgs: []};
    for (const file of svgs) {
      const text = fs.readFileSync(file, 'utf8');
      result.svgs.push({file: path.basename(file), ...await page.evaluate(source => {
        const doc = new DOMParser().parseFromString(source, 'image/svg+xml');
        return {
          parse_errors: doc.getElementsByTagName('parsererror').length,
          root: doc.documentElement.nodeName,
          gpu_rows: doc.querySelectorAll('g.gpu-row').length,
          stage_bars: doc.querySelectorAll('g.stage-bar').length,
          memory_lines: doc.querySelectorAll('g.memory-line').length,
        };
      }, text)});
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
  else throw new Error('usage: check_outputs.mjs trace TRACE.json | page REPORT.html [PLOT.svg ...]');
  console.log(JSON.stringify(result));
} catch (e) {
  console.error(e.stack || String(e));
  process.exit(1);
}
