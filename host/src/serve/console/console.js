// The Evo console: pages over the server's own /v1 API, with no framework and no build
// step. Everything shown is built as DOM nodes from text (never parsed as HTML), so a
// skill's name, input or error cannot inject markup.

const main = document.getElementById("main");
/** Whether the signed-in browser may change the server: `admin`; `call` (signed in with the
 * token that only calls); `none` (the server takes no changes over HTTP). */
const manage = document.body.dataset.manage || "none";

/** Why the signed-in browser cannot change the server, and what to do, or null when it can. */
function cannotManage() {
  if (manage === "admin") return null;
  return manage === "call"
    ? h("p", { class: "muted" }, "Changing the server needs the admin token: sign out and sign in with it.")
    : h("p", { class: "muted" }, "This server takes no changes over HTTP: it was started without an admin token (evo serve --admin-token).");
}

/** An element: `h("td", { class: "num" }, "12")`. Strings become text nodes. */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (value === true) el.setAttribute(key, "");
    else el.setAttribute(key, value);
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Replaces `el`'s children with `children` (nested arrays flattened, empties dropped). */
function fill(el, ...children) {
  el.replaceChildren(...children.flat(Infinity).filter((c) => c !== undefined && c !== null && c !== false));
}

/** A failed request, as the API reports it: `{ code, error, hint }`. */
class ApiError extends Error {
  constructor(status, body) {
    super(body.error || `the server answered ${status}`);
    this.status = status;
    this.code = body.code || "HTTP_" + status;
    this.hint = body.hint;
    this.body = body;
  }
}

async function api(path, options = {}) {
  const init = { headers: { Accept: "application/json" }, ...options };
  if (options.json !== undefined) {
    init.method = init.method || "POST";
    init.headers = { ...init.headers, "Content-Type": "application/json" };
    init.body = JSON.stringify(options.json);
  }
  const response = await fetch(path, init);
  if (response.status === 401) {
    location.assign("/login?next=" + encodeURIComponent(location.pathname + location.search));
    throw new ApiError(401, { code: "UNAUTHORIZED", error: "signed out" });
  }
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new ApiError(response.status, body);
  return body;
}

/** An error as the page shows it: what happened, its code, and what to do. */
function problem(error) {
  return h("div", { class: "problem", role: "alert" },
    h("p", {}, h("strong", {}, error.code ? `[${error.code}] ` : ""), error.message),
    error.hint ? h("p", { class: "muted" }, error.hint) : null);
}

const time = (ms) => new Date(ms).toLocaleString();
const clock = (ms) => new Date(ms).toLocaleTimeString();
const millis = (ms) => (ms >= 1000 ? (ms / 1000).toFixed(2) + " s" : ms >= 10 ? ms.toFixed(0) + " ms" : ms.toFixed(2) + " ms");
const json = (value) => JSON.stringify(value, null, 2);
const badge = (status) => h("span", { class: "badge " + status }, status);

/** Timers and streams of the page shown; stopped when another page is shown. */
let running = [];
function keep(stop) { running.push(stop); }
function every(ms, f) {
  let timer = null;
  const tick = async () => {
    if (!document.hidden) await f();
    timer = setTimeout(tick, ms);
  };
  tick();
  keep(() => clearTimeout(timer));
}

/** The live calls stream, shared by the pages that show it. */
function live(onEvent) {
  const source = new EventSource("/v1/calls/live");
  for (const kind of ["started", "finished", "lagged"]) {
    source.addEventListener(kind, (e) => onEvent(kind, JSON.parse(e.data)));
  }
  keep(() => source.close());
  return source;
}

const routes = [
  [/^\/$/, overview, "Overview"],
  [/^\/skills$/, skills, "Skills"],
  [/^\/skills\/([^/]+)$/, skill, "Skills"],
  [/^\/calls$/, calls, "Calls"],
  [/^\/security$/, security, "Security"],
  [/^\/memory$/, memory, "Memory"],
];

async function show(path, { focus = false } = {}) {
  running.forEach((stop) => stop());
  running = [];
  const url = new URL(path, location.origin);
  const route = routes.find(([pattern]) => pattern.test(url.pathname));
  for (const link of document.querySelectorAll("nav a")) {
    const current = route && link.textContent.trim() === route[2];
    if (current) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  fill(main);
  if (!route) {
    main.append(h("h1", {}, "Not found"), h("p", {}, "No console page is at ", h("code", {}, url.pathname), "."));
    return;
  }
  document.title = `${route[2]} · Evo console`;
  const args = url.pathname.match(route[0]).slice(1).map(decodeURIComponent);
  try {
    await route[1](url.searchParams, ...args);
  } catch (error) {
    main.append(problem(error));
  }
  if (focus) main.focus();
}

function go(path) {
  history.pushState(null, "", path);
  show(path, { focus: true });
}

document.addEventListener("click", (event) => {
  const link = event.target.closest("a[href]");
  if (!link || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
  const url = new URL(link.href);
  if (url.origin !== location.origin || !routes.some(([p]) => p.test(url.pathname))) return;
  if (url.hash && url.pathname === location.pathname) return; // a link within the page
  event.preventDefault();
  go(url.pathname + url.search);
});
window.addEventListener("popstate", () => show(location.pathname + location.search));

// ---------------------------------------------------------------- charts

const palette = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"];

/** A line chart of `series` ([{ label, points: [[t, v]] }]) drawn into `canvas`. */
function lines(canvas, series, { unit = "", from, to }) {
  const ratio = window.devicePixelRatio || 1;
  const width = canvas.clientWidth, height = canvas.clientHeight;
  canvas.width = width * ratio;
  canvas.height = height * ratio;
  const g = canvas.getContext("2d");
  g.scale(ratio, ratio);
  const style = getComputedStyle(document.body);
  const fg = style.color, line = style.getPropertyValue("--line").trim() || "#ccc";
  const top = Math.max(1, ...series.flatMap((s) => s.points.map(([, v]) => v)));
  const max = niceCeil(top);
  const left = 44, bottom = 20, plotW = width - left - 8, plotH = height - bottom - 8;
  const x = (t) => left + ((t - from) / Math.max(1, to - from)) * plotW;
  const y = (v) => 8 + plotH - (v / max) * plotH;
  g.font = "11px system-ui, sans-serif";
  g.fillStyle = fg;
  g.strokeStyle = line;
  g.lineWidth = 1;
  for (let i = 0; i <= 4; i++) {
    const v = (max * i) / 4;
    g.beginPath();
    g.moveTo(left, y(v));
    g.lineTo(width - 8, y(v));
    g.stroke();
    g.fillText(short(v) + unit, 2, y(v) + 4);
  }
  g.fillText(clock(from), left, height - 4);
  const end = clock(to);
  g.fillText(end, width - 8 - g.measureText(end).width, height - 4);
  series.forEach((s, i) => {
    g.strokeStyle = palette[i % palette.length];
    g.lineWidth = 2;
    g.beginPath();
    s.points.forEach(([t, v], j) => (j ? g.lineTo(x(t), y(v)) : g.moveTo(x(t), y(v))));
    g.stroke();
    const last = s.points.at(-1);
    if (last) {
      g.fillStyle = g.strokeStyle;
      g.beginPath();
      g.arc(x(last[0]), y(last[1]), 3, 0, 2 * Math.PI);
      g.fill();
    }
  });
  const latest = series.map((s) => `${s.label} ${short(s.points.at(-1)?.[1] ?? 0)}${unit}`).join(", ");
  canvas.setAttribute("aria-label", `${canvas.dataset.title}: now ${latest || "nothing"}`);
}

function niceCeil(v) {
  const step = 10 ** Math.floor(Math.log10(v));
  return [1, 2, 5, 10].map((m) => m * step).find((c) => c >= v);
}
const short = (v) => (v >= 100 || Number.isInteger(v) ? Math.round(v).toString() : v >= 1 ? v.toFixed(1) : v.toFixed(2));

function legend(series) {
  return h("ul", { class: "legend" }, series.map((s, i) => {
    const swatch = h("span", { "aria-hidden": "true" });
    swatch.style.background = palette[i % palette.length];
    return h("li", {}, swatch, s.label);
  }));
}

function chartPanel(title) {
  const canvas = h("canvas", { role: "img", "data-title": title, "aria-label": title });
  const key = h("div");
  return { panel: h("section", { class: "panel" }, h("h2", {}, title), canvas, key), canvas, key };
}

/** Bars for rows of `[label, value]`, longest first, in a table a reader can scan. */
function bars(rows, { caption, unit = "", cls = "" }) {
  if (!rows.length) return h("p", { class: "muted" }, "None in this window.");
  const top = Math.max(...rows.map(([, v]) => v));
  return h("table", {},
    h("caption", { class: "muted" }, caption),
    h("tbody", {}, rows.map(([label, value]) => {
      const bar = h("div", { class: "bar " + cls });
      bar.style.width = `${(value / top) * 100}%`;
      return h("tr", {}, h("th", { scope: "row" }, label), h("td", { class: "num" }, short(value) + unit), h("td", { class: "wide" }, bar));
    })));
}

// ---------------------------------------------------------------- overview

async function overview() {
  main.append(h("h1", {}, "Overview"));
  const cards = h("div", { class: "cards", "aria-live": "polite" });
  const rate = chartPanel("Calls per second");
  const gauges = chartPanel("Instances and slots in use");
  const latency = h("section", { class: "panel" }, h("h2", {}, "Latency by skill"));
  const errors = h("section", { class: "panel" }, h("h2", {}, "Errors by code"));
  const note = h("p", { class: "muted" });
  main.append(cards, note, h("div", { class: "grid" }, rate.panel, gauges.panel, latency, errors));
  const samples = new Map(); // node → [[t, instances, running, slots]]
  every(2000, async () => {
    let stats;
    try {
      stats = await api("/v1/stats?window_s=300");
    } catch (error) {
      fill(note, problem(error));
      return;
    }
    const here = stats.nodes.find((n) => n.node === stats.node) || stats.nodes[0];
    const g = here?.gauges || {};
    fill(cards, ...[
      ["Skills", stats.skills_served], ["Calls running", g.calls_running], ["Queued", g.calls_queued],
      ["Call slots", g.call_slots], ["Wasm instances", g.wasm_instances], ["Calls (5 min)", stats.total_calls],
    ].map(([label, value]) => h("div", { class: "card" }, label, h("b", {}, value ?? "–"))));
    // Nodes serving now report gauges; the history's other writers (`evo` runs on a
    // terminal) are not nodes.
    const serving = stats.nodes.filter((n) => n.gauges).length;
    fill(note, serving > 1
      ? `${serving} nodes share this history; this page is served by ${stats.node}.`
      : `Served by ${stats.node}. The last ${stats.window_s / 60} minutes, in ${stats.step_s}-second steps.`);
    const from = stats.now_ms - stats.window_s * 1000, to = stats.now_ms;
    const rateSeries = stats.nodes.map((n) => ({
      label: n.node, points: n.calls_per_step.map((c, i) => [stats.start_ms + i * stats.step_s * 1000, c / stats.step_s]),
    }));
    lines(rate.canvas, rateSeries, { unit: "/s", from, to });
    fill(rate.key, legend(rateSeries));
    for (const n of stats.nodes) {
      if (!n.gauges) continue;
      // The answering node's samples since it started; the others' as this page saw them.
      const list = n.gauge_history?.length
        ? n.gauge_history.map((g) => [g.at_ms, g.wasm_instances, g.calls_running, g.call_slots])
        : samples.get(n.node) || [];
      list.push([stats.now_ms, n.gauges.wasm_instances, n.gauges.calls_running, n.gauges.call_slots]);
      while (list.length && list[0][0] < from) list.shift();
      samples.set(n.node, list);
    }
    const several = samples.size > 1;
    const gaugeSeries = [...samples].flatMap(([node, list]) => [
      { label: several ? `${node} instances` : "Wasm instances", points: list.map(([t, i]) => [t, i]) },
      { label: several ? `${node} calls running` : "Calls running (slots in use)", points: list.map(([t, , r]) => [t, r]) },
      { label: several ? `${node} slots` : "Call slots", points: list.map(([t, , , s]) => [t, s]) },
    ]);
    lines(gauges.canvas, gaugeSeries, { from, to });
    fill(gauges.key, legend(gaugeSeries));
    fill(latency, h("h2", {}, "Latency by skill"), stats.skills.length
      ? h("div", { class: "scroll" }, h("table", {},
        h("thead", {}, h("tr", {}, h("th", {}, "Skill"), h("th", { class: "num" }, "Calls"), h("th", { class: "num" }, "Errors"),
          h("th", { class: "num" }, "p50"), h("th", { class: "num" }, "p99"))),
        h("tbody", {}, stats.skills.map((s) => h("tr", {},
          h("td", {}, h("a", { href: "/skills/" + encodeURIComponent(s.skill) }, s.skill)),
          h("td", { class: "num" }, s.calls), h("td", { class: "num" }, s.errors),
          h("td", { class: "num" }, millis(s.p50_ms)), h("td", { class: "num" }, millis(s.p99_ms)))))))
      : h("p", { class: "muted" }, "No calls in this window."));
    fill(errors, h("h2", {}, "Errors by code"),
      bars(stats.errors.map((e) => [e.code, e.count]), { caption: "Failed and refused calls in this window", cls: "err" }));
  });
}

// ---------------------------------------------------------------- skills

let catalogue = null;
async function skillNames() {
  catalogue = catalogue || (await api("/v1/skills"));
  return catalogue.map((s) => s.name);
}

async function skills(params) {
  const list = await api("/v1/skills");
  catalogue = list;
  const filter = h("input", { type: "search", id: "skill-filter", value: params.get("q") || "", placeholder: "name, kind or words" });
  const body = h("tbody");
  const render = () => {
    const q = filter.value.trim().toLowerCase();
    const shown = list.filter((s) => !q || `${s.name} ${s.kind} ${s.description}`.toLowerCase().includes(q));
    fill(body, ...shown.map((s) => h("tr", {},
      h("td", {}, h("a", { href: "/skills/" + encodeURIComponent(s.name) }, s.name)),
      h("td", {}, s.kind), h("td", {}, s.version), h("td", {}, s.description))));
    count.textContent = `${shown.length} of ${list.length} skills`;
  };
  const count = h("p", { class: "muted", "aria-live": "polite" });
  filter.addEventListener("input", render);
  main.append(h("h1", {}, "Skills"), installPanel(),
    h("form", { class: "filters", role: "search", onsubmit: (e) => e.preventDefault() },
      h("label", { for: "skill-filter" }, "Filter", filter)),
    count,
    h("div", { class: "scroll" }, h("table", {},
      h("thead", {}, h("tr", {}, h("th", {}, "Name"), h("th", {}, "Kind"), h("th", {}, "Version"), h("th", {}, "Description"))),
      body)));
  render();
}

/** Installing from a registry (the admin token's): a reference, and what came of it. */
function installPanel() {
  const refused = cannotManage();
  if (refused) return h("section", { class: "panel", id: "install" }, h("h2", {}, "Install from a registry"), refused);
  const reference = h("input", { id: "install-reference", type: "text", size: 48, required: true,
    placeholder: "oci://registry.example.com/skills/name:1.0" });
  const overwrite = h("input", { id: "install-overwrite", type: "checkbox" });
  const button = h("button", { type: "submit" }, "Install");
  const result = h("div", { id: "install-result", "aria-live": "polite" });
  const submit = async (event) => {
    event.preventDefault();
    button.disabled = true;
    fill(result, h("p", { class: "muted" }, "Pulling, checking the signature, installing…"));
    try {
      const out = await api("/v1/skills", { json: { reference: reference.value.trim(), overwrite: overwrite.checked } });
      catalogue = null;
      fill(result, h("p", {}, "Installed ", h("a", { href: "/skills" }, out.name), ` (${out.source?.digest || "sha256:" + out.digest}, signed by ${out.source?.signer?.key || "nobody"}).`),
        out.warnings?.length ? h("p", { class: "muted" }, out.warnings.join(" ")) : null);
    } catch (error) {
      fill(result, problem(error));
    } finally {
      button.disabled = false;
    }
  };
  return h("section", { class: "panel" }, h("h2", {}, "Install from a registry"),
    h("form", { id: "install-form", onsubmit: submit },
      h("label", { for: "install-reference" }, "Reference"), reference, " ",
      h("label", {}, overwrite, " replace one of the same name"), " ", button),
    h("p", { class: "muted" }, "Needs the admin token. The signature is checked as the server's [trust] says."),
    result);
}

/** What a skill is granted by name, with a form to grant more and a button per value to
 * revoke it, and uninstalling it (the admin token's). */
async function managePanel(name) {
  const panel = h("section", { class: "panel", id: "manage" });
  const refused = cannotManage();
  if (refused) {
    fill(panel, h("h2", {}, "Manage"), refused);
    return panel;
  }
  const result = h("div", { id: "manage-result", "aria-live": "polite" });
  const path = "/v1/skills/" + encodeURIComponent(name) + "/grants";
  const change = async (url, body) => {
    try {
      render(await api(url, { json: body }));
      const granted = document.getElementById("granted");
      if (granted) fill(granted, grantList((await api("/v1/skills/" + encodeURIComponent(name))).granted));
      fill(result, h("p", {}, "Done: the next call has it."));
    } catch (error) {
      fill(result, problem(error));
    }
  };
  const render = (g) => {
    const values = [];
    for (const [key, value] of Object.entries(g.entry || {})) {
      if (Array.isArray(value)) value.forEach((v) => values.push([key, v, { [key]: [v] }]));
      else if (key === "memory" && value !== "none") values.push([key, value, { memory: value }]);
      else if (key === "llm" && value === true) values.push([key, "the language model", { llm: true }]);
    }
    const kind = h("select", { id: "grant-kind" },
      ["dirs", "hosts", "secrets", "memory", "llm"].map((k) => h("option", { value: k }, k)));
    const value = h("input", { id: "grant-value", type: "text", size: 40, placeholder: "/srv/docs::/data:ro, https://api.example.com, API_KEY, read" });
    const grant = (event) => {
      event.preventDefault();
      const k = kind.value, v = value.value.trim();
      const body = k === "llm" ? { llm: true } : k === "memory" ? { memory: v || "read" } : { [k]: [v] };
      change(path, body);
    };
    let armed = false;
    const uninstall = h("button", { type: "button", class: "plain", id: "uninstall" }, "Uninstall…");
    uninstall.addEventListener("click", async () => {
      if (!armed) {
        armed = true;
        uninstall.textContent = `Click again to uninstall ${g.keptUnder}`;
        return;
      }
      try {
        await api("/v1/skills/" + encodeURIComponent(g.keptUnder), { method: "DELETE" });
        catalogue = null;
        go("/skills");
      } catch (error) {
        fill(result, problem(error));
      }
    });
    fill(panel, h("h2", {}, "Manage"),
      h("p", {}, g.asking === "by-name"
        ? `It has no manifest to ask with: it gets all that is granted to ${g.keptUnder} by name.`
        : `It gets what its manifest asks for, within its own grants ([grants.skill.${g.keptUnder}]) or, without them, the server's.`),
      values.length
        ? h("ul", { id: "grant-values" }, values.map(([k, v, body]) => h("li", {}, `${k}: ${v} `,
          h("button", { type: "button", class: "plain", onclick: () => change(path + "/revoke", body) }, "Revoke"))))
        : h("p", { class: "muted", id: "grant-values" }, "Nothing granted to it by name."),
      h("form", { id: "grant-form", onsubmit: grant },
        h("label", { for: "grant-kind" }, "Grant"), kind, " ", value, " ", h("button", { type: "submit" }, "Grant")),
      h("p", {}, uninstall),
      result);
  };
  try {
    render(await api(path));
  } catch (error) {
    fill(panel, h("h2", {}, "Manage"), problem(error));
  }
  return panel;
}

/** An input to start from: each required property (and any with a default or example). */
function example(schema) {
  if (!schema || typeof schema !== "object") return {};
  if (schema.default !== undefined) return schema.default;
  if (Array.isArray(schema.examples) && schema.examples.length) return schema.examples[0];
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  if (schema.enum) return schema.enum[0];
  switch (type) {
    case "object": {
      const out = {};
      const required = new Set(schema.required || []);
      for (const [key, sub] of Object.entries(schema.properties || {})) {
        if (required.has(key) || sub.default !== undefined) out[key] = example(sub);
      }
      return out;
    }
    case "array": return [];
    case "string": return "";
    case "integer": case "number": return schema.minimum ?? 0;
    case "boolean": return false;
    default: return schema.properties ? example({ ...schema, type: "object" }) : null;
  }
}

function facts(pairs) {
  return h("dl", { class: "facts" }, pairs.filter(([, v]) => v !== undefined && v !== null && v !== "")
    .map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}

/** A grant or a request for one, a line per kind; the empty kinds named together. */
function grantList(value) {
  const empty = (v) => v === null || v === false || v === "none" || (Array.isArray(v) && !v.length)
    || (typeof v === "object" && !Array.isArray(v) && !Object.keys(v).length);
  const text = (v) => (Array.isArray(v) ? v.map((i) => (typeof i === "object" ? JSON.stringify(i) : i)).join(", ")
    : typeof v === "object" ? JSON.stringify(v) : String(v));
  const entries = Object.entries(value || {});
  const given = entries.filter(([, v]) => !empty(v));
  const none = entries.filter(([, v]) => empty(v)).map(([k]) => k);
  return h("div", {},
    given.length ? facts(given.map(([k, v]) => [k, text(v)])) : h("p", {}, "Nothing."),
    none.length ? h("p", { class: "muted" }, "None of: " + none.join(", ")) : null);
}

async function skill(params, name) {
  const s = await api("/v1/skills/" + encodeURIComponent(name));
  const p = s.provenance || {};
  main.append(
    h("p", {}, h("a", { href: "/skills" }, "← All skills")),
    h("h1", {}, s.name, " ", h("span", { class: "muted" }, s.version)),
    h("p", {}, s.description),
    h("div", { class: "grid" },
      h("section", { class: "panel" }, h("h2", {}, "What it is"), facts([
        ["Kind", s.kind],
        ["Loaded from", p.loadedFrom],
        ["Installed from", p.registry ? `${p.registry.reference} (${p.registry.digest})` : p.installed ? "a local package" : "not installed (a built-in or a skills directory)"],
        ["Signed by", p.registry?.signer ? `${p.registry.signer.key} (${p.registry.signer.fingerprint})` : undefined],
        ["Digest", p.digest ? "sha256:" + p.digest : undefined],
        ["Installed", p.installedAt ? time(p.installedAt) : undefined],
        ["Limits", s.limits ? h("pre", {}, json(s.limits)) : undefined],
      ])),
      h("section", { class: "panel" }, h("h2", {}, "Grants"),
        h("h3", {}, "Asked for"), grantList(s.asked),
        h("h3", {}, "Granted"), s.granted === undefined ? h("p", { class: "muted" }, "Not a sandboxed component: its kind decides what it can reach.") : h("div", { id: "granted" }, grantList(s.granted)))),
    await managePanel(s.name));
  const schemas = h("div", { class: "grid" },
    h("section", { class: "panel" }, h("h2", {}, "Input schema"), h("pre", {}, json(s.inputSchema))),
    h("section", { class: "panel" }, h("h2", {}, "Output schema"), h("pre", {}, json(s.outputSchema))));

  const input = h("textarea", { id: "call-input", spellcheck: "false", "aria-describedby": "call-help" });
  input.value = params.get("input") || json(example(s.inputSchema));
  const button = h("button", { type: "submit" }, "Call");
  const result = h("div", { id: "call-result", "aria-live": "polite" });
  const submit = async (event) => {
    event?.preventDefault();
    let value;
    try {
      value = JSON.parse(input.value || "{}");
    } catch (e) {
      fill(result, problem({ code: "INVALID_INPUT", message: "The input is not JSON: " + e.message, hint: "Write the input as one JSON object." }));
      return;
    }
    button.disabled = true;
    fill(result, h("p", { class: "muted" }, "Calling…"));
    try {
      const out = await api(`/v1/skills/${encodeURIComponent(s.name)}/call?events=true`, { json: value });
      fill(result,
        h("h3", {}, "Output ", h("span", { class: "muted" }, millis(out.duration_ms))),
        h("pre", { class: "output" }, json(out.output)),
        out.events?.length ? [h("h3", {}, "Events"), h("pre", {}, out.events.map((e) => JSON.stringify(e)).join("\n"))] : null,
        out.intermediate_steps?.length ? [h("h3", {}, "Steps"), h("pre", {}, json(out.intermediate_steps))] : null,
        out.memory?.length ? [h("h3", {}, "Memory writes"), h("pre", {}, json(out.memory))] : null);
    } catch (error) {
      const body = error.body || {};
      fill(result, problem(error),
        body.report ? [h("h3", {}, "Report"), h("pre", {}, json(body.report))] : null,
        body.intermediate_steps?.length ? [h("h3", {}, "Steps"), h("pre", {}, json(body.intermediate_steps))] : null);
    } finally {
      button.disabled = false;
    }
  };
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) submit(e);
  });
  main.append(h("section", { class: "panel" },
    h("h2", {}, "Call it"),
    h("form", { onsubmit: submit },
      h("label", { for: "call-input" }, "Input (JSON)"), input,
      h("p", { id: "call-help", class: "muted" }, "Ctrl+Enter calls. The call goes through the same checks as any other: schema, grants, limits."),
      button),
    result), schemas);
}

// ---------------------------------------------------------------- calls

function callRows(rows, { showSkill = true, showError = false } = {}) {
  const body = h("tbody");
  for (const row of rows) {
    const detail = h("tr", { class: "detail", hidden: true }, h("td", { colspan: 8 },
      facts([["Run", row.task_id], ["Arguments", h("pre", {}, row.arguments)], ["Error", row.error],
        ["Code", row.code], ["What to do", row.hint]])));
    const toggle = h("button", { class: "plain", type: "button", "aria-expanded": "false", "aria-label": `Details of call ${row.id}` }, "▸");
    toggle.addEventListener("click", () => {
      detail.hidden = !detail.hidden;
      toggle.setAttribute("aria-expanded", String(!detail.hidden));
      toggle.textContent = detail.hidden ? "▸" : "▾";
    });
    body.append(h("tr", { "data-id": row.id },
      h("td", {}, toggle), h("td", {}, time(row.at_ms)),
      showSkill ? h("td", {}, h("a", { href: "/skills/" + encodeURIComponent(row.skill) }, row.skill)) : null,
      h("td", {}, row.caller), h("td", {}, badge(row.status)), h("td", { class: "num" }, millis(row.duration_ms)),
      h("td", {}, row.code || ""), showError ? h("td", {}, row.error || "") : null), detail);
  }
  return h("div", { class: "scroll" }, h("table", { class: "calls" },
    h("thead", {}, h("tr", {}, h("th", {}, h("span", { class: "muted" }, "")), h("th", {}, "When"), showSkill ? h("th", {}, "Skill") : null,
      h("th", {}, "Caller"), h("th", {}, "Status"), h("th", { class: "num" }, "Took"), h("th", {}, "Code"),
      showError ? h("th", {}, "Why") : null)),
    body));
}

function field(id, label, control) {
  control.id = id;
  control.name = id;
  return h("label", { for: id }, label, control);
}

async function calls(params) {
  main.append(h("h1", {}, "Calls"));
  const running = h("ul", { class: "plain", id: "live-running" });
  const finished = h("ul", { class: "plain", id: "live-finished" });
  const state = h("p", { class: "muted", "aria-live": "polite" }, "Connecting…");
  main.append(h("div", { class: "grid" },
    h("section", { class: "panel" }, h("h2", {}, "Running now"), running),
    h("section", { class: "panel" }, h("h2", {}, "Just finished"), state, finished)));

  const names = await skillNames().catch(() => []);
  const skillInput = h("input", { list: "skill-names", value: params.get("skill") || "" });
  const callerInput = h("input", { value: params.get("caller") || "", placeholder: "mcp, cli, an agent…" });
  const status = h("select", {}, ["", "success", "error", "blocked"].map((s) =>
    h("option", { value: s, selected: params.get("status") === s }, s || "any")));
  const since = h("input", { type: "datetime-local", value: params.get("since") || "" });
  const limit = h("input", { type: "number", min: 1, max: 1000, value: params.get("limit") || 100 });
  const table = h("div", { id: "history" });
  const load = async () => {
    const query = new URLSearchParams();
    if (skillInput.value) query.set("skill", skillInput.value);
    if (callerInput.value) query.set("caller", callerInput.value);
    if (status.value) query.set("status", status.value);
    if (since.value) query.set("since_ms", new Date(since.value).getTime());
    query.set("limit", limit.value || 100);
    try {
      const rows = await api("/v1/calls?" + query);
      fill(table, h("p", { class: "muted" }, `${rows.length} calls, newest first.`), callRows(rows));
    } catch (error) {
      fill(table, problem(error));
    }
  };
  const form = h("form", { class: "filters", onsubmit: (e) => {
    e.preventDefault();
    const shown = new URLSearchParams();
    for (const [k, c] of [["skill", skillInput], ["caller", callerInput], ["status", status], ["since", since], ["limit", limit]]) {
      if (c.value && !(k === "limit" && c.value === "100")) shown.set(k, c.value);
    }
    history.replaceState(null, "", "/calls" + (shown.size ? "?" + shown : ""));
    load();
  } },
  field("skill", "Skill", skillInput), h("datalist", { id: "skill-names" }, names.map((n) => h("option", { value: n }))),
  field("caller", "Caller", callerInput), field("status", "Status", status), field("since", "Since", since),
  field("limit", "At most", limit), h("button", { type: "submit" }, "Show"));
  main.append(h("section", {}, h("h2", {}, "History"), form, table));
  await load();

  const starts = new Map();
  let reload = null;
  const source = live((kind, event) => {
    if (kind === "lagged") {
      state.textContent = `Missed ${event.missed} events (this page fell behind).`;
      return;
    }
    if (kind === "started") {
      const item = h("li", { "data-call": event.call }, h("strong", {}, event.skill), ` by ${event.caller} since ${clock(event.at_ms)}`);
      starts.set(event.call, item);
      running.prepend(item);
      return;
    }
    starts.get(event.call)?.remove();
    starts.delete(event.call);
    finished.prepend(h("li", {}, badge(event.status), " ", h("strong", {}, event.skill), ` by ${event.caller}, ${millis(event.duration_ms)}`,
      event.code ? h("span", { class: "muted" }, ` [${event.code}] ${event.error || ""}`) : null));
    while (finished.children.length > 50) finished.lastChild.remove();
    clearTimeout(reload);
    reload = setTimeout(load, 400);
  });
  source.addEventListener("open", () => (state.textContent = "Live: calls appear here as they end."));
  source.addEventListener("error", () => (state.textContent = "Disconnected; reconnecting…"));
  keep(() => clearTimeout(reload));
}

// ---------------------------------------------------------------- security

async function security() {
  main.append(h("h1", {}, "Security"),
    h("p", {}, "Every call the host refused before it ran (a capability not granted, a confirmation not given, a path or host outside the allowlist) and every request the sandbox refused from inside a skill."));
  const body = h("div", { "aria-live": "polite" });
  main.append(body);
  const load = async () => {
    // Refused before it ran (blocked), and refused by the sandbox inside a skill.
    const [blocked, denied] = await Promise.all([
      api("/v1/calls?status=blocked&limit=1000"), api("/v1/calls?code=PERMISSION_DENIED&limit=1000"),
    ]);
    const rows = [...blocked, ...denied].sort((a, b) => b.at_ms - a.at_ms || b.id - a.id).slice(0, 1000);
    const count = (key) => [...rows.reduce((m, r) => m.set(key(r), (m.get(key(r)) || 0) + 1), new Map())].sort((a, b) => b[1] - a[1]);
    fill(body,
      h("div", { class: "grid" },
        h("section", { class: "panel" }, h("h2", {}, "By skill"), bars(count((r) => r.skill), { caption: `${rows.length} refusals (the latest 1,000)`, cls: "err" })),
        h("section", { class: "panel" }, h("h2", {}, "By reason"), bars(count((r) => r.code || "—"), { caption: "Error codes", cls: "err" }))),
      h("h2", {}, "Refusals, newest first"),
      rows.length ? callRows(rows, { showError: true }) : h("p", { class: "muted" }, "Nothing has been refused."));
  };
  await load();
  let reload = null;
  live((kind, event) => {
    if (kind === "finished" && (event.status === "blocked" || event.code === "PERMISSION_DENIED")) {
      clearTimeout(reload);
      reload = setTimeout(() => load().catch((e) => body.prepend(problem(e))), 400);
    }
  });
  keep(() => clearTimeout(reload));
}

// ---------------------------------------------------------------- memory

async function memory(params) {
  main.append(h("h1", {}, "Memory"));
  const query = h("input", { type: "search", required: true, value: params.get("q") || "" });
  const sources = ["user", "capture", "skill", "file", "log"].map((s) => h("input", { type: "checkbox", value: s }));
  const old = h("input", { type: "checkbox" });
  const hits = h("div", { id: "memory-hits", "aria-live": "polite" });
  const detail = h("div", { id: "memory-history" });
  const search = async (event) => {
    event?.preventDefault();
    if (!query.value.trim()) return;
    history.replaceState(null, "", "/memory?q=" + encodeURIComponent(query.value));
    try {
      const found = await api("/v1/memory/search", { json: {
        query: query.value, limit: 20, sources: sources.filter((c) => c.checked).map((c) => c.value), include_superseded: old.checked,
      } });
      fill(hits, found.length ? h("ul", { class: "plain" }, found.map((hit) => h("li", {},
        h("p", {}, hit.text),
        h("p", { class: "muted" }, `${hit.source} · ${hit.category} · ${time(hit.createdAt)} · score ${hit.score.toFixed(2)}`,
          hit.supersededBy ? " · replaced" : "", " ",
          ["user", "capture", "skill"].includes(hit.source)
            ? h("button", { class: "plain", type: "button", onclick: () => versions(hit.id, detail) }, "Versions and decisions")
            : null))))
        : h("p", { class: "muted" }, "Nothing found."));
    } catch (error) {
      fill(hits, problem(error));
    }
  };
  main.append(h("div", { class: "grid" },
    h("section", { class: "panel" }, h("h2", {}, "Search"),
      h("form", { class: "filters", role: "search", onsubmit: search },
        field("memory-query", "Words or a question", query),
        h("fieldset", {}, h("legend", {}, "Sources (all when none)"),
          sources.map((c) => h("label", { class: "inline" }, c, c.value))),
        h("label", { class: "inline" }, old, "Also replaced versions"),
        h("button", { type: "submit" }, "Search")),
      hits),
    h("section", { class: "panel" }, h("h2", {}, "A fact's history"), detail,
      h("p", { class: "muted" }, "Choose “Versions and decisions” on a stored fact."))));
  const days = h("ul", { class: "plain", id: "log-days" });
  const log = h("div", { id: "log-text" });
  main.append(h("section", { class: "panel" }, h("h2", {}, "Daily logs"), h("div", { class: "grid" }, days, log)));
  const list = await api("/v1/memory/logs");
  fill(days, ...(list.days.length ? list.days.slice(0, 30).map((day) => h("li", {},
    h("button", { class: "plain", type: "button", onclick: () => showLog(day, log) }, day)))
    : [h("li", { class: "muted" }, "No daily logs yet.")]));
  if (list.days.length) await showLog(list.days[0], log);
  if (query.value) await search();
}

async function versions(id, into) {
  try {
    const story = await api("/v1/memory/entries/" + encodeURIComponent(id));
    fill(into,
      h("h3", {}, "Versions, oldest first"),
      story.versions.length ? h("ol", {}, story.versions.map((v) => h("li", {}, v.text, h("span", { class: "muted" }, ` (${time(v.createdAt)}${v.supersededBy ? ", replaced" : ""})`))))
        : h("p", { class: "muted" }, "None left: it was forgotten."),
      h("h3", {}, "Decisions"),
      h("ol", {}, story.events.map((e) => h("li", {}, h("strong", {}, e.action), ` ${time(e.at)}: ${e.reason}`))));
    into.focus?.();
  } catch (error) {
    fill(into, problem(error));
  }
}

async function showLog(day, into) {
  try {
    const log = await api("/v1/memory/logs/" + encodeURIComponent(day));
    fill(into, h("h3", {}, day), log.text ? h("pre", {}, log.text) : h("p", { class: "muted" }, "Nothing logged that day."));
  } catch (error) {
    fill(into, problem(error));
  }
}

show(location.pathname + location.search);
