// Eddy's web console: one page, routed by the URL's hash. Every call goes to
// /console/api on the same origin with the session cookie; a change carries the session's
// CSRF token. All data is put into the page as text (never as HTML).

const state = { session: null, timers: [] };

// ---------- helpers ----------

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'class') e.className = v;
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

const svgNs = 'http://www.w3.org/2000/svg';
function svg(tag, attrs = {}, ...children) {
  const e = document.createElementNS(svgNs, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  for (const c of children.flat()) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

function toast(message, bad = false) {
  const t = document.getElementById('toast');
  t.textContent = message;
  t.className = 'show' + (bad ? ' bad' : '');
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { t.className = ''; }, bad ? 8000 : 3000);
}

class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

// A call of the console's JSON API.
async function api(method, path, body) {
  const headers = {};
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && state.session) headers['x-csrf-token'] = state.session.csrf;
  const r = await fetch('/console/api/' + path, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'same-origin',
  });
  const text = await r.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = text; }
  if (r.status === 401 && !path.startsWith('login')) { showLogin(); throw new ApiError(401, 'signed out'); }
  if (!r.ok) {
    const m = (data && data.error && (data.error.message || data.error)) || data?.message || r.statusText;
    throw new ApiError(r.status, String(m));
  }
  return data;
}

// An S3 request through the console (as the signed-in user); XML answers parsed.
async function s3(method, path, { body, headers = {}, raw = false } = {}) {
  const h = { ...headers };
  if (method !== 'GET' && method !== 'HEAD') h['x-csrf-token'] = state.session.csrf;
  const r = await fetch('/console/api/s3' + path, { method, headers: h, body, credentials: 'same-origin' });
  if (r.status === 401) {
    const t = await r.text();
    if (t.includes('"error"')) { showLogin(); throw new ApiError(401, 'signed out'); }
  }
  if (raw) return r;
  const text = method === 'HEAD' ? '' : await r.text();
  const doc = text ? new DOMParser().parseFromString(text, 'application/xml') : null;
  if (!r.ok) {
    const code = doc?.querySelector('Code')?.textContent || r.status;
    const msg = doc?.querySelector('Message')?.textContent || r.statusText;
    throw new ApiError(r.status, `${code}: ${msg}`);
  }
  return { doc, headers: r.headers, status: r.status };
}

// A key or bucket path, each segment encoded as S3 canonicalizes it.
function s3Path(bucket, key = '') {
  const enc = (s) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
  return '/' + enc(bucket) + (key ? '/' + key.split('/').map(enc).join('/') : '');
}

function texts(node, sel) { return [...node.querySelectorAll(sel)].map((n) => n.textContent); }
function child(node, name) { return node.getElementsByTagName(name)[0]?.textContent ?? ''; }

function bytes(n) {
  if (n === undefined || n === null || n < 0) return '';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0; let v = n;
  while (v >= 1024 && i < u.length - 1) { v /= 1024; i++; }
  return (i ? v.toFixed(1) : v) + ' ' + u[i];
}

function when(ms) { return ms ? new Date(ms).toISOString().replace('T', ' ').replace('Z', '') : ''; }

function page(title, ...children) {
  const p = document.getElementById('page');
  p.replaceChildren(el('h1', {}, title), ...children);
  return p;
}

function every(ms, fn) {
  const id = setInterval(() => { fn().catch(() => {}); }, ms);
  state.timers.push(id);
}

function confirmThen(question, fn) {
  return async () => { if (window.confirm(question)) await guarded(fn)(); };
}

function guarded(fn) {
  return async (...args) => {
    try { await fn(...args); } catch (e) { if (e.status !== 401) toast(e.message, true); }
  };
}

function pretty(payload) {
  if (!payload) return el('span', { class: 'muted' }, 'null');
  if (payload.encoding === 'hex') return el('code', { title: `${payload.size} bytes, not UTF-8: hex` }, payload.data);
  try {
    const v = JSON.parse(payload.data);
    if (typeof v === 'object' && v !== null) return el('pre', {}, JSON.stringify(v, null, 2));
  } catch { /* not JSON */ }
  return el('span', {}, payload.data);
}

function chart(points, key, scale = 1) {
  const w = 300; const h = 80;
  const vals = points.map((p) => (p[key] || 0) * scale);
  const max = Math.max(1e-9, ...vals);
  const pts = vals.map((v, i) => `${(i / Math.max(1, vals.length - 1)) * w},${h - 4 - (v / max) * (h - 8)}`).join(' ');
  return svg('svg', { class: 'chart', viewBox: `0 0 ${w} ${h}`, preserveAspectRatio: 'none' }, svg('polyline', { points: pts }));
}

// ---------- session ----------

function showLogin() {
  state.session = null;
  for (const t of state.timers) clearInterval(t);
  state.timers = [];
  document.getElementById('bar').hidden = true;
  document.getElementById('page').replaceChildren();
  document.getElementById('login').hidden = false;
}

async function start() {
  document.getElementById('login-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const f = ev.target;
    const err = document.getElementById('login-error');
    err.textContent = '';
    try {
      await api('POST', 'login', { access_key: f.access_key.value, secret_key: f.secret_key.value });
      f.secret_key.value = '';
      await signedIn();
    } catch (e) { err.textContent = e.message; }
  });
  document.getElementById('logout').addEventListener('click', async () => {
    try { await api('POST', 'logout'); } catch { /* signed out either way */ }
    showLogin();
  });
  window.addEventListener('hashchange', () => { if (state.session) route(); });
  try { await signedIn(); } catch { showLogin(); }
}

async function signedIn() {
  state.session = await api('GET', 'session');
  document.getElementById('login').hidden = true;
  document.getElementById('bar').hidden = false;
  document.getElementById('who').textContent = state.session.user + (state.session.admin ? ' (administrator)' : '');
  document.getElementById('nav-security').hidden = !state.session.admin;
  await route();
}

// ---------- routing ----------

const routes = [
  [/^#\/overview$/, overview],
  [/^#\/topics$/, topics],
  [/^#\/topics\/(.+)$/, topic],
  [/^#\/groups$/, groups],
  [/^#\/groups\/(.+)$/, group],
  [/^#\/buckets$/, buckets],
  [/^#\/buckets\/([^/?]+)(?:\?prefix=(.*))?$/, bucket],
  [/^#\/object\/([^/]+)\/(.+)$/, object],
  [/^#\/tables$/, tablesPage],
  [/^#\/tables\/([^/]+)\/(.+)$/, table],
  [/^#\/pipelines$/, pipelines],
  [/^#\/pipelines\/(.+)$/, pipeline],
  [/^#\/security$/, security],
  [/^#\/audit$/, audit],
];

async function route() {
  for (const t of state.timers) clearInterval(t);
  state.timers = [];
  const hash = location.hash || '#/overview';
  for (const a of document.querySelectorAll('#nav a')) {
    a.classList.toggle('active', hash.startsWith('#/' + a.dataset.page));
  }
  for (const [re, fn] of routes) {
    const m = hash.match(re);
    if (m) {
      try { await fn(...m.slice(1).map((s) => (s === undefined ? '' : decodeURIComponent(s)))); } catch (e) {
        if (e.status !== 401) page('Error', el('p', { class: 'error', id: 'page-error' }, e.message));
      }
      return;
    }
  }
  location.hash = '#/overview';
}

// ---------- overview ----------

async function overview() {
  const graphs = el('div', { class: 'cards', id: 'graphs' });
  const nodes = el('div', { id: 'nodes' });
  page('Overview', nodes, el('h2', {}, 'Last hour'), graphs);
  const draw = async () => {
    const o = await api('GET', 'overview');
    const n = o.nodes || {};
    if (!o.nodes) nodes.replaceChildren(el('p', { class: 'muted', id: 'nodes-hidden' }, 'Nodes and drives are shown to the administrator.'));
    const drives = (n.drives || []).map((d) => el('tr', {},
      el('td', {}, d.index), el('td', {}, d.path),
      el('td', {}, el('span', { class: 'badge ' + (d.online ? 'ok' : 'bad') }, d.online ? 'online' : 'offline')),
      el('td', { class: 'num' }, bytes(d.capacity_bytes)), el('td', { class: 'num' }, bytes(d.free_bytes)),
      el('td', { class: 'num' }, d.errors ?? '')));
    const addrs = (n.nodes || []).map((x) => el('tr', {}, el('td', {}, x.address), el('td', {}, x.holder ?? ''), el('td', {}, x.epoch ?? ''), el('td', {}, x.expires ?? '')));
    if (o.nodes) nodes.replaceChildren(
      el('div', { class: 'cards' },
        el('div', { class: 'card' }, el('h3', {}, 'Status'), el('div', { class: 'big', id: 'status' }, n.status || '')),
        el('div', { class: 'card' }, el('h3', {}, 'Catalog'), el('div', { class: 'big' }, n.catalog || '')),
        el('div', { class: 'card' }, el('h3', {}, 'Erasure coding'), el('div', { class: 'big' }, n.erasure || '')),
        el('div', { class: 'card' }, el('h3', {}, 'Heal backlog'), el('div', { class: 'big' }, n.heal_backlog ?? ''))),
      el('h2', {}, 'Kafka addresses'),
      el('table', {}, el('tr', {}, el('th', {}, 'Address'), el('th', {}, 'Held by'), el('th', {}, 'Epoch'), el('th', {}, 'Lease until')), addrs),
      el('h2', {}, 'Drives'),
      el('table', { id: 'drives' }, el('tr', {}, el('th', {}, '#'), el('th', {}, 'Path'), el('th', {}, 'Health'), el('th', { class: 'num' }, 'Capacity'), el('th', { class: 'num' }, 'Free'), el('th', { class: 'num' }, 'I/O errors')), drives));
    const pts = o.series.points;
    const last = (k) => (pts.length ? pts[pts.length - 1][k] : 0);
    const card = (title, key, unit, scale = 1) => el('div', { class: 'card' },
      el('h3', {}, title), el('div', { class: 'big' }, `${(last(key) * scale).toFixed(1)} ${unit}`), chart(pts, key, scale));
    graphs.replaceChildren(
      card('S3 requests', 's3_requests', '/s'),
      card('Kafka requests', 'kafka_requests', '/s'),
      card('HTTP requests (catalog, admin, console)', 'http_requests', '/s'),
      card('Kafka latency (mean)', 'kafka_latency_ms', 'ms'),
      card('Kafka bytes in', 'kafka_bytes_in', 'KiB/s', 1 / 1024),
      card('Kafka bytes out', 'kafka_bytes_out', 'KiB/s', 1 / 1024),
      card('Catalog commits', 'catalog_commits', '/s'));
    if (!pts.length) graphs.append(el('p', { class: 'muted' }, `Samples are taken every ${o.series.interval_ms / 1000} s; the graphs start after two.`));
  };
  await draw();
  every(10000, draw);
}

// ---------- topics ----------

async function topics() {
  const filter = el('input', { placeholder: 'filter by name', id: 'topic-filter' });
  const list = el('div', { id: 'topic-list' });
  const parts = [el('form', { class: 'inline', onsubmit: (e) => { e.preventDefault(); load(0); } }, filter, el('button', {}, 'Filter')), list];
  if (state.session.can.create_topics) {
    const name = el('input', { name: 'name', id: 'new-topic-name', required: true, placeholder: 'orders' });
    const count = el('input', { name: 'partitions', id: 'new-topic-partitions', type: 'number', min: 1, value: 1 });
    const retention = el('input', { name: 'retention', id: 'new-topic-retention', placeholder: 'retention.ms (optional)' });
    parts.unshift(el('form', {
      class: 'inline', id: 'create-topic', onsubmit: guarded(async (e) => {
        e.preventDefault();
        const configs = retention.value ? { 'retention.ms': retention.value } : {};
        await api('POST', 'topics', { name: name.value, partitions: Number(count.value), configs });
        toast(`Topic ${name.value} created`);
        location.hash = '#/topics/' + encodeURIComponent(name.value);
      }),
    }, el('label', {}, 'New topic', name), el('label', {}, 'Partitions', count), el('label', {}, 'Retention', retention), el('button', { class: 'primary', id: 'create-topic-button' }, 'Create topic')));
  }
  page('Topics', ...parts);
  const load = async (offset) => {
    const r = await api('GET', `topics?offset=${offset}&limit=50&filter=${encodeURIComponent(filter.value)}`);
    const rows = r.topics.map((t) => el('tr', { 'data-topic': t.name },
      el('td', {}, el('a', { href: '#/topics/' + encodeURIComponent(t.name) }, t.name), t.internal ? el('span', { class: 'badge' }, ' internal') : ''),
      el('td', { class: 'num' }, t.partitions), el('td', { class: 'num' }, t.records), el('td', { class: 'num' }, bytes(t.bytes)),
      el('td', {}, t.configs['cleanup.policy'] || ''), el('td', { class: 'num' }, t.configs['retention.ms'] || '')));
    list.replaceChildren(
      el('table', {}, el('tr', {}, el('th', {}, 'Topic'), el('th', { class: 'num' }, 'Partitions'), el('th', { class: 'num' }, 'Records'), el('th', { class: 'num' }, 'Size'), el('th', {}, 'Cleanup'), el('th', { class: 'num' }, 'retention.ms')), rows),
      pager(r.total, offset, 50, load));
  };
  await load(0);
}

function pager(total, offset, size, load) {
  return el('div', { class: 'pager' },
    el('button', { disabled: offset === 0, onclick: () => load(Math.max(0, offset - size)) }, 'Previous'),
    el('span', { class: 'muted' }, `${total ? offset + 1 : 0}–${Math.min(total, offset + size)} of ${total}`),
    el('button', { disabled: offset + size >= total, onclick: () => load(offset + size) }, 'Next'));
}

async function topic(name) {
  const t = await api('GET', 'topics/' + encodeURIComponent(name));
  const parts = t.partitions.map((p) => el('tr', {}, el('td', {}, p.partition), el('td', { class: 'num' }, p.first_offset), el('td', { class: 'num' }, p.next_offset)));
  const configs = Object.entries(t.configs).map(([k, v]) => el('tr', {}, el('td', {}, k), el('td', {}, v)));
  const records = el('div', { id: 'records' });
  const partition = el('select', { id: 'browse-partition' }, t.partitions.map((p) => el('option', { value: p.partition }, p.partition)));
  const from = el('select', { id: 'browse-from' }, el('option', { value: 'offset' }, 'from offset'), el('option', { value: 'time' }, 'from time'));
  const at = el('input', { id: 'browse-at', placeholder: 'offset, or a time like 2026-12-05T10:00' });
  const browse = guarded(async () => {
    let q = `partition=${partition.value}&limit=50`;
    if (at.value && from.value === 'offset') q += `&offset=${encodeURIComponent(at.value)}`;
    if (at.value && from.value === 'time') q += `&time=${Date.parse(at.value)}`;
    const r = await api('GET', `topics/${encodeURIComponent(name)}/records?${q}`);
    records.replaceChildren(r.records.length ? el('table', { id: 'record-table' },
      el('tr', {}, el('th', {}, 'Offset'), el('th', {}, 'Time'), el('th', {}, 'Key'), el('th', {}, 'Value'), el('th', {}, 'Headers')),
      r.records.map((rec) => el('tr', { 'data-offset': rec.offset },
        el('td', { class: 'num' }, rec.offset), el('td', {}, when(rec.timestamp)), el('td', {}, pretty(rec.key)), el('td', { class: 'value' }, pretty(rec.value)),
        el('td', {}, rec.headers.map(([k, v]) => el('div', {}, `${k}: `, pretty(v)))))))
      : el('p', { class: 'muted' }, `No records from offset ${r.from}.`));
  });
  const body = [
    el('div', { class: 'row' },
      el('div', {}, el('h2', {}, 'Partitions'), el('table', { id: 'partitions' }, el('tr', {}, el('th', {}, 'Partition'), el('th', { class: 'num' }, 'First offset'), el('th', { class: 'num' }, 'Next offset')), parts)),
      el('div', {}, el('h2', {}, 'Configs'), el('table', { id: 'configs' }, configs))),
    el('h2', {}, 'Messages'),
    el('form', { class: 'inline', onsubmit: (e) => { e.preventDefault(); browse(); } }, el('label', {}, 'Partition', partition), el('label', {}, 'Start', from), el('label', {}, 'At', at), el('button', { id: 'browse-button' }, 'Browse')),
    records,
  ];
  if (t.can.write) {
    const key = el('input', { id: 'produce-key', placeholder: 'key (optional)' });
    const value = el('textarea', { id: 'produce-value', placeholder: '{"hello": "world"}' });
    const ppart = el('select', { id: 'produce-partition' }, t.partitions.map((p) => el('option', { value: p.partition }, p.partition)));
    body.push(el('h2', {}, 'Produce a test record'), el('form', {
      id: 'produce', onsubmit: guarded(async (e) => {
        e.preventDefault();
        const r = await api('POST', `topics/${encodeURIComponent(name)}/records`, { partition: Number(ppart.value), key: key.value || null, value: value.value });
        toast(`Produced at offset ${r.offset} of partition ${r.partition}`);
        await browse();
      }),
    }, el('div', { class: 'inline' }, el('label', {}, 'Partition', ppart), el('label', {}, 'Key', key)), value, el('button', { class: 'primary', id: 'produce-button' }, 'Produce')));
  }
  if (t.can.alter) {
    const k = el('input', { id: 'config-key', placeholder: 'retention.ms' });
    const v = el('input', { id: 'config-value', placeholder: '604800000' });
    body.push(el('h2', {}, 'Change a config'), el('form', {
      class: 'inline', id: 'alter-config', onsubmit: guarded(async (e) => {
        e.preventDefault();
        await api('POST', `topics/${encodeURIComponent(name)}/config`, v.value ? { set: { [k.value]: v.value } } : { delete: [k.value] });
        toast(`${k.value} changed`);
        await topic(name);
      }),
    }, el('label', {}, 'Config', k), el('label', {}, 'Value (empty: back to default)', v), el('button', { id: 'alter-button' }, 'Apply')));
  }
  if (t.can.delete) {
    body.push(el('h2', {}, 'Danger zone'), el('button', {
      class: 'danger', id: 'delete-topic',
      onclick: confirmThen(`Delete topic ${name} and all its records?`, async () => {
        await api('DELETE', 'topics/' + encodeURIComponent(name));
        toast(`Topic ${name} deleted`);
        location.hash = '#/topics';
      }),
    }, 'Delete topic'));
  }
  page(`Topic ${name}`, ...body);
  await browse();
}

// ---------- groups ----------

async function groups() {
  const list = el('div', { id: 'group-list' });
  page('Consumer groups', list);
  const load = async (offset) => {
    const r = await api('GET', `groups?offset=${offset}&limit=50`);
    list.replaceChildren(
      el('table', {}, el('tr', {}, el('th', {}, 'Group'), el('th', {}, 'State'), el('th', {}, 'Protocol'), el('th', { class: 'num' }, 'Lag')),
        r.groups.map((g) => el('tr', { 'data-group': g.group },
          el('td', {}, el('a', { href: '#/groups/' + encodeURIComponent(g.group) }, g.group)), el('td', {}, g.state), el('td', {}, g.type || g.protocol_type), el('td', { class: 'num' }, g.lag < 0 ? '' : g.lag)))),
      pager(r.total, offset, 50, load));
  };
  await load(0);
}

async function group(name) {
  const history = [];
  const lagNow = el('span', { id: 'group-lag', class: 'big' });
  const graph = el('div', { id: 'lag-graph' });
  const members = el('div');
  const offsets = el('div');
  const actions = el('div');
  page(`Group ${name}`, el('div', { class: 'cards' }, el('div', { class: 'card' }, el('h3', {}, 'Lag (records)'), lagNow, graph)), el('h2', {}, 'Members'), members, el('h2', {}, 'Offsets'), offsets, actions);
  const draw = async () => {
    const g = await api('GET', 'groups/' + encodeURIComponent(name));
    history.push({ t: Date.now(), lag: g.lag });
    if (history.length > 360) history.shift();
    lagNow.textContent = String(g.lag);
    lagNow.dataset.state = g.state;
    graph.replaceChildren(chart(history, 'lag'), el('div', { class: 'muted' }, `state ${g.state}, sampled every 2 s while this page is open`));
    members.replaceChildren(g.members.length ? el('table', {}, el('tr', {}, el('th', {}, 'Member'), el('th', {}, 'Client'), el('th', {}, 'Host')),
      g.members.map((m) => el('tr', {}, el('td', {}, m.member_id), el('td', {}, m.client_id), el('td', {}, m.client_host)))) : el('p', { class: 'muted' }, 'No active members.'));
    offsets.replaceChildren(el('table', { id: 'group-offsets' }, el('tr', {}, el('th', {}, 'Topic'), el('th', {}, 'Partition'), el('th', { class: 'num' }, 'Committed'), el('th', { class: 'num' }, 'End'), el('th', { class: 'num' }, 'Lag')),
      g.offsets.map((o) => el('tr', {}, el('td', {}, o.topic), el('td', {}, o.partition), el('td', { class: 'num' }, o.committed), el('td', { class: 'num' }, o.end), el('td', { class: 'num' }, o.lag)))));
    const buttons = [];
    if (g.can.reset) {
      const to = el('select', { id: 'reset-to' }, el('option', { value: 'earliest' }, 'earliest'), el('option', { value: 'latest' }, 'latest'), el('option', { value: 'time' }, 'a time'));
      const time = el('input', { id: 'reset-time', placeholder: '2026-12-05T10:00' });
      buttons.push(el('h2', {}, 'Reset offsets'), el('form', {
        class: 'inline', id: 'reset', onsubmit: (e) => { e.preventDefault(); },
      }, el('label', {}, 'To', to), el('label', {}, 'Time', time), el('button', {
        type: 'button', id: 'reset-button',
        onclick: confirmThen(`Reset the offsets of group ${name}?`, async () => {
          const body = { to: to.value };
          if (to.value === 'time') body.time = Date.parse(time.value);
          await api('POST', `groups/${encodeURIComponent(name)}/reset`, body);
          toast('Offsets reset');
          await draw();
        }),
      }, 'Reset')));
    }
    if (g.can.delete) {
      buttons.push(el('button', { class: 'danger', id: 'delete-group', onclick: confirmThen(`Delete group ${name}?`, async () => { await api('DELETE', 'groups/' + encodeURIComponent(name)); location.hash = '#/groups'; }) }, 'Delete group'));
    }
    // Rebuilt only when what may be done changed, so a form being filled in stays.
    const sig = JSON.stringify(g.can);
    if (actions.dataset.sig !== sig) { actions.dataset.sig = sig; actions.replaceChildren(...buttons); }
  };
  await draw();
  every(2000, draw);
}

// ---------- buckets ----------

async function buckets() {
  const r = await s3('GET', '/');
  const names = [...r.doc.getElementsByTagName('Bucket')].map((b) => ({ name: child(b, 'Name'), created: child(b, 'CreationDate') }));
  page('Buckets', el('table', { id: 'bucket-list' }, el('tr', {}, el('th', {}, 'Bucket'), el('th', {}, 'Created')),
    names.map((b) => el('tr', {}, el('td', {}, el('a', { href: '#/buckets/' + encodeURIComponent(b.name) }, b.name)), el('td', {}, b.created)))));
}

async function bucket(name, prefix = '') {
  const can = (await api('GET', `buckets/${encodeURIComponent(name)}/permissions`)).can;
  const listing = el('div', { id: 'objects' });
  const settings = el('div', { id: 'bucket-settings' });
  const crumbs = el('div', { class: 'crumbs' }, el('a', { href: '#/buckets/' + encodeURIComponent(name) }, name + '/'));
  let acc = '';
  for (const part of prefix.split('/').filter(Boolean)) {
    acc += part + '/';
    crumbs.append(el('a', { href: `#/buckets/${encodeURIComponent(name)}?prefix=${encodeURIComponent(acc)}` }, part + '/'));
  }
  const body = [crumbs];
  if (can.upload) {
    const input = el('input', { type: 'file', id: 'upload-input', multiple: true });
    const drop = el('div', { class: 'drop', id: 'drop' }, 'Drop files here to upload them under ', el('code', {}, prefix || '/'), ' or ', input);
    const upload = guarded(async (files) => {
      for (const f of files) {
        await s3('PUT', s3Path(name, prefix + f.name), { body: f, headers: { 'content-type': f.type || 'application/octet-stream' } });
        toast(`Uploaded ${prefix + f.name}`);
      }
      await list('');
    });
    input.addEventListener('change', () => upload([...input.files]));
    drop.addEventListener('dragover', (e) => { e.preventDefault(); drop.classList.add('over'); });
    drop.addEventListener('dragleave', () => drop.classList.remove('over'));
    drop.addEventListener('drop', (e) => { e.preventDefault(); drop.classList.remove('over'); upload([...e.dataTransfer.files]); });
    body.push(drop);
  }
  body.push(listing, el('h2', {}, 'Settings'), settings);
  page(`Bucket ${name}`, ...body);
  const list = async (token) => {
    let q = `list-type=2&delimiter=%2F&max-keys=100&prefix=${encodeURIComponent(prefix)}`;
    if (token) q += `&continuation-token=${encodeURIComponent(token)}`;
    const r = await s3('GET', `${s3Path(name)}?${q}`);
    const dirs = texts(r.doc, 'CommonPrefixes > Prefix');
    const objs = [...r.doc.getElementsByTagName('Contents')].map((c) => ({ key: child(c, 'Key'), size: Number(child(c, 'Size')), modified: child(c, 'LastModified') }));
    const next = child(r.doc, 'NextContinuationToken');
    listing.replaceChildren(el('table', { id: 'object-table' },
      el('tr', {}, el('th', {}, 'Name'), el('th', { class: 'num' }, 'Size'), el('th', {}, 'Modified'), el('th', {}, '')),
      dirs.map((d) => el('tr', {}, el('td', {}, el('a', { href: `#/buckets/${encodeURIComponent(name)}?prefix=${encodeURIComponent(d)}` }, d.slice(prefix.length))), el('td', {}), el('td', {}), el('td', {}))),
      objs.map((o) => el('tr', { 'data-key': o.key },
        el('td', {}, el('a', { href: `#/object/${encodeURIComponent(name)}/${encodeURIComponent(o.key)}` }, o.key.slice(prefix.length))),
        el('td', { class: 'num' }, bytes(o.size)), el('td', {}, o.modified),
        el('td', {}, can.download ? el('a', { href: `/console/api/s3${s3Path(name, o.key)}?console-download=1`, download: o.key.split('/').pop(), class: 'download' }, 'Download') : '')))),
    next ? el('button', { id: 'more', onclick: guarded(() => list(next)) }, 'Next page') : '',
    token ? el('button', { onclick: guarded(() => list('')) }, 'First page') : '');
  };
  await list('');
  const setting = async (q, title, show) => {
    try {
      const r = await s3('GET', `${s3Path(name)}?${q}`);
      return el('div', { class: 'card' }, el('h3', {}, title), show(r));
    } catch (e) {
      return el('div', { class: 'card' }, el('h3', {}, title), el('span', { class: 'muted' }, e.status === 404 ? 'none' : e.message));
    }
  };
  const xml = (r) => el('pre', {}, new XMLSerializer().serializeToString(r.doc));
  settings.replaceChildren(el('div', { class: 'cards' },
    await setting('versioning', 'Versioning', (r) => el('span', {}, child(r.doc, 'Status') || 'never enabled')),
    await setting('notification', 'Notifications', xml),
    await setting('lifecycle', 'Lifecycle', xml),
    await setting('policy', 'Policy', (r) => el('pre', {}, r.doc ? new XMLSerializer().serializeToString(r.doc) : '')),
  ));
}

async function object(bucketName, key) {
  const head = await s3('HEAD', s3Path(bucketName, key));
  const meta = [];
  head.headers.forEach((v, k) => { meta.push(el('tr', {}, el('td', {}, k), el('td', {}, v))); });
  let tags = [];
  try {
    const t = await s3('GET', `${s3Path(bucketName, key)}?tagging`);
    tags = [...t.doc.getElementsByTagName('Tag')].map((x) => el('tr', {}, el('td', {}, child(x, 'Key')), el('td', {}, child(x, 'Value'))));
  } catch { /* no permission to read tags */ }
  const can = (await api('GET', `buckets/${encodeURIComponent(bucketName)}/permissions`)).can;
  page(`${bucketName}/${key}`,
    el('p', {}, can.download ? el('a', { id: 'download', href: `/console/api/s3${s3Path(bucketName, key)}?console-download=1`, download: key.split('/').pop() }, 'Download') : ''),
    el('h2', {}, 'Metadata'), el('table', { id: 'object-meta' }, meta),
    el('h2', {}, 'Tags'), tags.length ? el('table', {}, tags) : el('p', { class: 'muted' }, 'No tags.'),
    can.delete ? el('button', {
      class: 'danger', id: 'delete-object',
      onclick: confirmThen(`Delete ${key}?`, async () => {
        await s3('DELETE', s3Path(bucketName, key));
        location.hash = '#/buckets/' + encodeURIComponent(bucketName);
      }),
    }, 'Delete object') : '');
}

// ---------- tables ----------

async function tablesPage() {
  const r = await api('GET', 'iceberg/v1/namespaces');
  const out = [];
  for (const ns of r.namespaces) {
    const name = ns.join('.');
    let ids = [];
    try { ids = (await api('GET', `iceberg/v1/namespaces/${encodeURIComponent(ns.join('\x1f'))}/tables`)).identifiers; } catch { /* not allowed */ }
    out.push(el('h2', {}, name), ids.length ? el('ul', {}, ids.map((t) => el('li', {}, el('a', { href: `#/tables/${encodeURIComponent(name)}/${encodeURIComponent(t.name)}` }, t.name)))) : el('p', { class: 'muted' }, 'No tables.'));
  }
  page('Tables', el('div', { id: 'table-list' }, out));
}

async function table(ns, name) {
  const r = await api('GET', `iceberg/v1/namespaces/${encodeURIComponent(ns.split('.').join('\x1f'))}/tables/${encodeURIComponent(name)}`);
  const m = r.metadata;
  const schema = (m.schemas || []).find((s) => s['schema-id'] === m['current-schema-id']) || (m.schemas || [])[0] || { fields: [] };
  const type = (t) => {
    if (typeof t === 'string') return t;
    if (t.type === 'struct') return `struct<${t.fields.map((f) => `${f.name}: ${type(f.type)}`).join(', ')}>`;
    if (t.type === 'list') return `list<${type(t.element)}>`;
    if (t.type === 'map') return `map<${type(t.key)}, ${type(t.value)}>`;
    return t.type;
  };
  const snaps = (m.snapshots || []).slice(-20).reverse();
  const preview = el('div', { id: 'preview' });
  page(`Table ${ns}.${name}`,
    el('p', { class: 'muted' }, m.location),
    el('h2', {}, 'Schema'),
    el('table', { id: 'schema' }, el('tr', {}, el('th', {}, 'Id'), el('th', {}, 'Column'), el('th', {}, 'Type'), el('th', {}, 'Required')),
      schema.fields.map((f) => el('tr', {}, el('td', {}, f.id), el('td', {}, f.name), el('td', {}, type(f.type)), el('td', {}, f.required ? 'yes' : 'no')))),
    el('h2', {}, 'Snapshots'),
    el('table', { id: 'snapshots' }, el('tr', {}, el('th', {}, 'Snapshot'), el('th', {}, 'Time'), el('th', {}, 'Operation'), el('th', { class: 'num' }, 'Added records'), el('th', { class: 'num' }, 'Total records')),
      snaps.map((s) => el('tr', {}, el('td', {}, String(s['snapshot-id'])), el('td', {}, when(s['timestamp-ms'])), el('td', {}, s.summary?.operation || ''), el('td', { class: 'num' }, s.summary?.['added-records'] || ''), el('td', { class: 'num' }, s.summary?.['total-records'] || '')))),
    el('h2', {}, 'Preview'), preview);
  try {
    const rows = await api('GET', `tables/${encodeURIComponent(ns)}/${encodeURIComponent(name)}/rows?limit=20`);
    preview.replaceChildren(rows.rows.length ? el('table', { id: 'preview-rows' }, el('tr', {}, rows.columns.map((c) => el('th', {}, c))),
      rows.rows.map((row) => el('tr', {}, row.map((v) => el('td', {}, v === null ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v))))))
      : el('p', { class: 'muted' }, 'No rows yet.'));
  } catch (e) { preview.replaceChildren(el('p', { class: 'muted' }, e.message)); }
}

// ---------- pipelines ----------

async function pipelines() {
  const r = await api('GET', 'admin/v1/pipelines');
  page('Pipelines', el('table', { id: 'pipeline-list' }, el('tr', {}, el('th', {}, 'Pipeline'), el('th', {}, 'Status'), el('th', {}, 'Deployed'), el('th', {}, 'Reason')),
    r.pipelines.map((p) => el('tr', {}, el('td', {}, el('a', { href: '#/pipelines/' + encodeURIComponent(p.name) }, p.name)),
      el('td', {}, el('span', { class: 'badge ' + (p.status === 'Ready' ? 'ok' : p.status === 'Error' ? 'bad' : '') }, p.status)), el('td', {}, p.deployed_revision ?? ''), el('td', {}, p.reason)))));
}

function pipelineGraph(def, rates = {}) {
  const nodes = [...(def.triggers || []).map((t) => ({ name: t.name, kind: 'trigger', detail: t.kind + (t.bucket ? ' ' + t.bucket : t.topic ? ' ' + t.topic : '') })),
    ...(def.functions || []).map((f) => ({ name: f.name, kind: 'function', detail: f.url || '' }))];
  const links = def.links || [];
  // Columns by distance from a trigger.
  const depth = {};
  for (const n of nodes) depth[n.name] = n.kind === 'trigger' ? 0 : undefined;
  for (let i = 0; i < nodes.length; i++) {
    for (const l of links) if (depth[l.from] !== undefined) depth[l.to] = Math.max(depth[l.to] ?? 0, depth[l.from] + 1);
  }
  const cols = {};
  const pos = {};
  for (const n of nodes) {
    const d = depth[n.name] ?? 0;
    cols[d] = (cols[d] || 0) + 1;
    pos[n.name] = { x: 20 + d * 220, y: 20 + (cols[d] - 1) * 70 };
  }
  const h = 40 + Math.max(1, ...Object.values(cols)) * 70;
  const w = 60 + (Math.max(0, ...Object.values(depth).filter((d) => d !== undefined)) + 1) * 220;
  return svg('svg', { class: 'graph', id: 'pipeline-graph', viewBox: `0 0 ${w} ${h}`, height: h },
    links.filter((l) => pos[l.from] && pos[l.to]).map((l) => {
      const r = rates[`${l.from}-${l.to}`];
      const x = (pos[l.from].x + 170 + pos[l.to].x) / 2;
      const y = (pos[l.from].y + pos[l.to].y) / 2 + 16;
      return svg('g', { 'data-link': `${l.from}-${l.to}` },
        svg('line', { x1: pos[l.from].x + 170, y1: pos[l.from].y + 22, x2: pos[l.to].x, y2: pos[l.to].y + 22 }),
        r ? svg('text', { x: x - 20, y }, `${r.delivered_per_s.toFixed(1)}/s`) : '');
    }),
    nodes.map((n) => svg('g', { 'data-node': n.name },
      svg('rect', { x: pos[n.name].x, y: pos[n.name].y, width: 170, height: 44, rx: 6, class: n.kind }),
      svg('text', { x: pos[n.name].x + 8, y: pos[n.name].y + 18 }, n.name),
      svg('text', { x: pos[n.name].x + 8, y: pos[n.name].y + 34, class: 'muted' }, n.detail.slice(0, 26)))));
}

async function pipeline(name) {
  const p = await api('GET', 'admin/v1/pipelines/' + encodeURIComponent(name));
  const def = p.deployed_definition || p.definition || {};
  let rates = {};
  try { rates = (await api('GET', `pipelines/${encodeURIComponent(name)}/rates`)).links; } catch { /* no samples yet */ }
  const linkRows = Object.entries(rates).map(([link, r]) => el('tr', { 'data-link': link }, el('td', {}, link),
    el('td', { class: 'num' }, r.delivered_per_s.toFixed(2)), el('td', { class: 'num' }, r.failed_per_s.toFixed(2)),
    el('td', { class: 'num' }, r.dead_lettered_per_s.toFixed(2)), el('td', { class: 'num' }, r.waiting)));
  const traces = el('div', { id: 'traces' });
  const spans = el('div', { id: 'spans' });
  page(`Pipeline ${name}`,
    el('p', {}, el('span', { class: 'badge ' + (p.status === 'Ready' ? 'ok' : p.status === 'Error' ? 'bad' : ''), id: 'pipeline-status' }, p.status), ' ', p.reason),
    pipelineGraph(def, rates),
    el('h2', {}, 'Links (last 10 s)'),
    linkRows.length ? el('table', { id: 'link-rates' }, el('tr', {}, el('th', {}, 'Link'), el('th', { class: 'num' }, 'Delivered/s'), el('th', { class: 'num' }, 'Failed attempts/s'), el('th', { class: 'num' }, 'Dead letters/s'), el('th', { class: 'num' }, 'Waiting')), linkRows)
      : el('p', { class: 'muted' }, 'No samples yet (taken every 10 s).'),
    el('p', { class: 'muted' }, `Dead-letter topic: `, el('a', { href: '#/topics/' + encodeURIComponent(def.dead_letter_topic || 'dead-letter') }, def.dead_letter_topic || 'dead-letter')),
    el('h2', {}, 'Cursors'),
    el('table', {}, el('tr', {}, el('th', {}, 'Cursor'), el('th', {}, 'Partition'), el('th', { class: 'num' }, 'Next')),
      (p.cursors || []).map((c) => el('tr', {}, el('td', {}, c.cursor), el('td', {}, c.partition), el('td', { class: 'num' }, c.next)))),
    el('h2', {}, 'Recent traces'), traces, spans);
  const t = await api('GET', `admin/v1/pipelines/${encodeURIComponent(name)}/traces?limit=50`);
  const list = t.traces || [];
  traces.replaceChildren(list.length ? el('table', { id: 'trace-list' }, el('tr', {}, el('th', {}, 'Trace'), el('th', {}, 'Status'), el('th', { class: 'num' }, 'Duration (ms)'), el('th', { class: 'num' }, 'Spans')),
    list.map((x) => el('tr', { 'data-trace': x.trace_id, 'data-status': x.status },
      el('td', {}, el('button', { type: 'button', class: 'trace-link link', onclick: guarded(() => showTrace(name, x.trace_id, spans)) }, x.trace_id)),
      el('td', {}, el('span', { class: 'badge ' + (x.status === 'ok' ? 'ok' : 'bad') }, x.status)), el('td', { class: 'num' }, x.duration_ms?.toFixed?.(1) ?? ''), el('td', { class: 'num' }, x.spans ?? ''))))
    : el('p', { class: 'muted' }, 'No traces yet.'));
}

async function showTrace(name, id, into) {
  const t = await api('GET', `admin/v1/pipelines/${encodeURIComponent(name)}/traces?trace=${encodeURIComponent(id)}`);
  into.replaceChildren(el('h2', {}, `Trace ${id}`), el('table', { id: 'span-tree' }, el('tr', {}, el('th', {}, 'Span'), el('th', {}, 'Status'), el('th', { class: 'num' }, 'Duration (ms)'), el('th', {}, 'Detail')),
    (t.spans || []).map((s) => el('tr', {}, el('td', {}, '\u00a0\u00a0'.repeat(s.depth || 0) + (s.name || '')), el('td', { 'data-status': s.status }, s.status || ''), el('td', { class: 'num' }, s.duration_ms?.toFixed?.(1) ?? ''), el('td', {}, [s.link, s.attempt ? `attempt ${s.attempt}` : '', s.code || ''].filter(Boolean).join(', '))))));
}

// ---------- security ----------

async function security() {
  const users = await api('GET', 'admin/v1/users');
  const policies = await api('GET', 'admin/v1/policies');
  const views = (await api('GET', 'views')).views;
  page('Security',
    el('h2', {}, 'Broker views'),
    el('table', { id: 'views' }, el('tr', {}, el('th', {}, 'View'), el('th', {}, 'Kafka listeners'), el('th', {}, 'Bucket'), el('th', {}, 'Users')),
      el('tr', {}, el('td', {}, 'default'), el('td', {}, 'the --kafka-listen addresses'), el('td', {}, ''), el('td', {}, 'every user')),
      views.map((v) => el('tr', {}, el('td', {}, v.name), el('td', {}, v.listeners.join(', ')), el('td', {}, v.bucket), el('td', {}, v.users.length ? v.users.join(', ') : 'every user')))),
    el('h2', {}, 'Users'),
    el('table', { id: 'users' }, el('tr', {}, el('th', {}, 'User'), el('th', {}, 'Policies attached')),
      (users.users || []).map((u) => el('tr', {}, el('td', {}, u.name),
        el('td', {}, (policies.policies || []).filter((p) => (p.attached || []).includes(u.name)).map((p) => p.name).join(', '))))),
    el('h2', {}, 'Policies'),
    el('table', { id: 'policies' }, el('tr', {}, el('th', {}, 'Policy'), el('th', {}, 'Attached to'), el('th', {}, 'Document')),
      (policies.policies || []).map((p) => el('tr', {}, el('td', {}, p.name), el('td', {}, (p.attached || []).join(', ')), el('td', {}, el('pre', {}, JSON.stringify(p.document, null, 2)))))));
}

// ---------- audit ----------

async function audit() {
  const r = await api('GET', 'audit?limit=200');
  page('Audit log', el('table', { id: 'audit' }, el('tr', {}, el('th', {}, 'Time'), el('th', {}, 'Who'), el('th', {}, 'From'), el('th', {}, 'API'), el('th', {}, 'Action'), el('th', {}, 'Resource'), el('th', {}, 'Outcome'), el('th', {}, 'Why')),
    r.entries.map((e) => el('tr', { 'data-outcome': e.outcome },
      el('td', {}, when(e.time_ms)), el('td', {}, e.principal ?? 'anonymous'), el('td', {}, e.source || ''), el('td', {}, e.protocol || ''),
      el('td', {}, e.action || ''), el('td', {}, e.resource || ''), el('td', {}, e.outcome || ''), el('td', {}, e.reason || '')))));
}

start();
