// The built-in live page: a client of the Foxglove WebSocket protocol (ws-protocol
// docs/spec.md: subprotocol foxglove.websocket.v1; `advertise` -> `subscribe`; binary
// message data = opcode 0x01, uint32 subscription id, uint64 timestamp, payload) on the
// server that serves this page (host/telemetry/server.py); plots by uPlot (vendor/).
"use strict";
const WINDOW_S = 20;          // plotted history
const MAX_POINTS = 1200;      // per plot in the window: longer runs are decimated
const REDRAW_MS = 100;
const TOPICS = ["/joints", "/tool", "/nodes", "/events", "/bus", "/scene"];
const $ = (id) => document.getElementById(id);

const state = { subs: {}, n: 0, plots: [], series: [], tool: null, toolSeries: [[], []],
                events: [], count: 0, lastT: -Infinity, arm: null, nodes: [] };

function markEvents(u) {     // fault and team events as vertical lines on every timeline
  const ctx = u.ctx, [x0, x1] = [u.scales.x.min, u.scales.x.max];
  ctx.save();
  ctx.strokeStyle = "rgba(200,0,0,0.7)";
  ctx.lineWidth = 2;
  for (const e of state.events) {
    if (e.t < x0 || e.t > x1) continue;
    const x = Math.round(u.valToPos(e.t, "x", true));
    ctx.beginPath(); ctx.moveTo(x, u.bbox.top); ctx.lineTo(x, u.bbox.top + u.bbox.height); ctx.stroke();
  }
  ctx.restore();
}

function makePlot(id, title, labels) {
  const div = document.createElement("div");
  div.className = "plot"; div.id = id;
  div.innerHTML = "<h3>" + title + "</h3>";
  $("plots").appendChild(div);
  const series = [{}].concat(labels.map((l, i) => ({ label: l, stroke: ["#1f77b4", "#d62728", "#2ca02c"][i],
                                                      scale: i ? "u" : "y", width: 1 })));
  const opts = { width: 330, height: 130, series, legend: { show: false },
                 scales: { x: { time: false } },
                 axes: [{}, { scale: "y" }, { scale: "u", side: 1, grid: { show: false } }],
                 hooks: { draw: [markEvents] } };
  return new uPlot(opts, [[]].concat(labels.map(() => [])), div);
}

function setup(n) {
  state.n = n;
  $("plots").innerHTML = "";
  state.plots = []; state.series = [];
  state.tool = makePlot("tool-plot", "tool position error (mm)", ["error"]);
  for (let i = 0; i < n; i++) {
    state.plots.push(makePlot("joint-" + (i + 1), "joint " + (i + 1), ["q (rad)", "u (N m)"]));
    state.series.push([[], [], []]);
  }
  state.toolSeries = [[], []];
}

function push(s, t, values) {   // decimated: at most MAX_POINTS per window; older than it dropped
  const x = s[0];
  if (x.length && t - x[x.length - 1] < WINDOW_S / MAX_POINTS) return;
  x.push(t);
  for (let k = 0; k < values.length; k++) s[k + 1].push(values[k]);
  while (x.length && x[0] < t - WINDOW_S) for (const a of s) a.shift();
}

function onJoints(m) {
  if (m.q.length !== state.n) setup(m.q.length);
  if (m.t < state.lastT) {   // a new run or a replay from the start
    setup(m.q.length); state.events = [];
  }
  state.lastT = m.t;
  state.count++;
  $("simtime").textContent = m.t.toFixed(3);   // at once: the node table changes at once too
  $("joint-count").textContent = state.count;
  for (let i = 0; i < state.n; i++) push(state.series[i], m.t, [m.q[i], m.u[i]]);
}

function onTool(m) { push(state.toolSeries, m.t, [m.error * 1e3]); $("tool-error").textContent = (m.error * 1e3).toFixed(2); }

function onNodes(m) { state.nodes = m.nodes; renderNodes(); }

function renderNodes() {
  const body = $("nodes").tBodies[0];
  body.innerHTML = "";
  for (const nd of state.nodes) {
    const tr = document.createElement("tr");
    tr.id = "node-" + nd.link;
    tr.dataset.state = nd.state;
    tr.className = nd.braked ? "braked" : (nd.member ? "" : "out");
    for (const v of [nd.link, nd.state, nd.since === undefined ? "" : nd.since.toFixed(3), nd.faults.join(", "),
                     nd.reason]) {
      const td = document.createElement("td"); td.textContent = v; tr.appendChild(td);
    }
    body.appendChild(tr);
  }
}

function onEvent(m) {
  state.events.push({ t: m.t, link: m.link, what: m.what });
  if (state.events.length > 500) state.events.shift();
  if (m.node) {   // the node's new state at once, not at the next /nodes
    state.nodes = state.nodes.map((nd) => (nd.link === m.link ? m.node : nd));
    renderNodes();
  }
  const div = document.createElement("div");
  div.className = "ev";
  div.textContent = m.t.toFixed(3) + " s  link " + m.link + ": " + m.what;
  $("events").prepend(div);
  while ($("events").childNodes.length > 200) $("events").lastChild.remove();
}

function onBus(m) { $("late").textContent = m.late_ticks; $("bad").textContent = m.host_bad_frames; }

function onScene(m) {
  const arm = m.entities.find((e) => e.id === "arm");
  const obs = m.entities.find((e) => e.id === "obstacles");
  const path = m.entities.find((e) => e.id === "path");
  // the path trail comes about once a second (a scene entity stays until replaced)
  state.arm = { pts: arm.lines[0].points, bad: arm.spheres.map((s) => s.color.r > 0.5 && s.color.b < 0.5),
                obs: obs ? obs.spheres : [],
                path: path ? path.lines[0].points : (state.arm ? state.arm.path : []) };
}

function drawArm() {   // top (x-y) and side (x-z) views
  const c = $("arm"), ctx = c.getContext("2d"), a = state.arm;
  ctx.clearRect(0, 0, c.width, c.height);
  if (!a) return;
  const all = a.pts.concat(a.path);
  const span = Math.max(0.5, ...all.map((p) => Math.max(Math.abs(p.x), Math.abs(p.y), Math.abs(p.z)))) * 1.1;
  const half = c.width / 2, s = (c.height / 2) / span;
  for (const [view, ox, vy] of [["x-y", 0, "y"], ["x-z", half, "z"]]) {
    const X = (p) => ox + half / 2 + p.x * s, Y = (p) => c.height / 2 - p[vy] * s;
    ctx.fillStyle = "#888"; ctx.font = "20px sans-serif"; ctx.fillText(view, ox + 8, 24);
    ctx.strokeStyle = "#2a2"; ctx.lineWidth = 2; ctx.beginPath();
    a.path.forEach((p, i) => (i ? ctx.lineTo(X(p), Y(p)) : ctx.moveTo(X(p), Y(p)))); ctx.stroke();
    for (const o of a.obs) {
      ctx.fillStyle = "rgba(230,150,30,0.5)"; ctx.beginPath();
      ctx.arc(X(o.pose.position), Y(o.pose.position), o.size.x / 2 * s, 0, 2 * Math.PI); ctx.fill();
    }
    ctx.strokeStyle = "#555"; ctx.lineWidth = 5; ctx.beginPath();
    a.pts.forEach((p, i) => (i ? ctx.lineTo(X(p), Y(p)) : ctx.moveTo(X(p), Y(p)))); ctx.stroke();
    a.pts.forEach((p, i) => {
      ctx.fillStyle = a.bad[i] ? "#d00" : "#36c"; ctx.beginPath(); ctx.arc(X(p), Y(p), 6, 0, 2 * Math.PI); ctx.fill();
    });
  }
}

function redraw() {
  if (state.n) {
    state.plots.forEach((p, i) => p.setData(state.series[i]));
    state.tool.setData(state.toolSeries);
  }
  drawArm();
}

const HANDLERS = { "/joints": onJoints, "/tool": onTool, "/nodes": onNodes, "/events": onEvent,
                   "/bus": onBus, "/scene": onScene };

function connect() {
  const ws = new WebSocket("ws://" + location.host + "/", ["foxglove.websocket.v1"]);
  ws.binaryType = "arraybuffer";
  const decoder = new TextDecoder();
  ws.onopen = () => { $("conn").textContent = "connected"; $("conn").className = ""; };
  ws.onclose = () => { $("conn").textContent = "disconnected"; $("conn").className = "down"; setTimeout(connect, 1000); };
  ws.onmessage = (ev) => {
    if (typeof ev.data === "string") {
      const msg = JSON.parse(ev.data);
      if (msg.op === "advertise") {
        state.subs = {};
        const subscriptions = [];
        for (const ch of msg.channels) {
          if (!TOPICS.includes(ch.topic)) continue;
          const id = Object.keys(state.subs).length + 1;
          state.subs[id] = ch.topic;
          subscriptions.push({ id, channelId: ch.id });
        }
        ws.send(JSON.stringify({ op: "subscribe", subscriptions }));
      }
      return;
    }
    const dv = new DataView(ev.data);
    if (dv.getUint8(0) !== 0x01) return;
    const topic = state.subs[dv.getUint32(1, true)];
    if (topic) HANDLERS[topic](JSON.parse(decoder.decode(new Uint8Array(ev.data, 13))));
  };
}

connect();
setInterval(redraw, REDRAW_MS);
