// contam view: the keyboard desk, the cell page's label form, the live progress on the browse page
// and the agreement page's refresh. Every text from the server is set with textContent (never
// as HTML); every write carries the token in the X-Contam-Token header.
"use strict";

const TOKEN = document.querySelector('meta[name="contam-token"]').content;
// key -> label, from the label buttons' data-keys (the page writes them from harness/labels.py)
const LABEL_KEYS = Object.fromEntries([...document.querySelectorAll("[data-label][data-keys]")]
  .flatMap((button) => button.dataset.keys.split(" ").map((key) => [key, button.dataset.label])));
const ACTION_KEYS = { "u": "undo", "s": "skip", "n": "note", "?": "help" };

async function post(url, body) {
  const response = await fetch(url, {
    method: "POST", credentials: "same-origin",
    headers: { "Content-Type": "application/json", "X-Contam-Token": TOKEN },
    body: JSON.stringify(body || {}),
  });
  const data = await response.json().catch(() => ({ error: response.statusText }));
  if (!response.ok) {
    const error = new Error(data.error || response.statusText);
    error.stale = Boolean(data.stale);
    throw error;
  }
  return data;
}

function setText(id, value) {
  const node = document.getElementById(id);
  if (node) node.textContent = value == null ? "" : String(value);
}

// -- the desk (/label and /adjudicate) ---------------------------------------------------------

function setUpDesk(desk) {
  const mode = desk.dataset.mode;
  const rater = desk.dataset.rater;
  const status = document.getElementById("status");
  const noteBox = document.getElementById("note-box");
  const note = document.getElementById("note");
  const help = document.getElementById("help");
  // Keys pressed while a label is being saved wait here, in order, and each applies to the
  // cell shown once the one before it is done: none is dropped.
  const pending = [];
  let working = false;

  function say(text, bad) {
    status.textContent = text;
    status.classList.toggle("bad", Boolean(bad));
  }

  function showDone(done) {
    document.getElementById("card").hidden = done;
    document.getElementById("done-msg").hidden = !done;
    desk.querySelectorAll("[data-while-cell]").forEach((node) => { node.hidden = done; });
  }

  function show(screen) {
    const cell = screen.cell;
    desk.dataset.cell = cell ? cell.id : "";
    showDone(!cell);
    if (cell) {
      for (const name of ["title", "question", "reference", "answer", "model", "subset", "item_id",
                          "bleu2", "bertscore_f1"]) {
        if (name in cell) setText("c-" + name, cell[name] ?? "—");  // no title: a dash, never "null"
      }
      if ("judge" in cell) setText("c-judge", cell.judge || "–");
      const raters = document.getElementById("c-raters");
      if (raters) {
        raters.replaceChildren(...(cell.raters || []).map((r) => {
          const item = document.createElement("li");
          item.textContent = r.rater + ": " + r.label + (r.note ? " (" + r.note + ")" : "");
          return item;
        }));
      }
    }
    setText("progress-text", screen.progress.text);
    const bar = document.getElementById("progress-bar");
    bar.max = screen.progress.total || 1;
    bar.value = screen.progress.done;
    say(screen.said);
  }

  async function act(action, label) {
    const cell = desk.dataset.cell;
    if (action !== "undo" && !cell) return;
    if (action === "label") say(pending.length ? "Saving… (" + pending.length + " more keys waiting)" : "Saving…");
    try {
      const body = { rater: rater, cell: cell, label: label };
      if (action === "label" && note.value.trim()) body.note = note.value;
      const screen = await post("/api/" + mode + "/" + action, body);
      if (action === "label") { note.value = ""; noteBox.hidden = true; }
      show(screen);
    } catch (error) {
      const waiting = pending.splice(0).length;  // they were meant for cells after this one
      say("Not saved: " + error.message + (waiting ? " (" + waiting + " keys after it not applied)" : ""), true);
      if (error.stale) setTimeout(() => location.reload(), 1500);
    }
  }

  async function queue(action, label) {
    pending.push([action, label]);
    if (working) return;
    working = true;
    while (pending.length) {
      const [nextAction, nextLabel] = pending.shift();
      await act(nextAction, nextLabel);
    }
    working = false;
  }

  function command(name) {
    if (name === "help") { help.showModal(); return; }
    if (!desk.dataset.cell && !working) return;  // done: nothing to undo, skip or note here
    if (name === "note") { noteBox.hidden = false; note.focus(); return; }
    queue(name);
  }

  desk.querySelectorAll("[data-label]").forEach((button) => {
    button.addEventListener("click", () => queue("label", button.dataset.label));
  });
  desk.querySelectorAll("[data-action]").forEach((button) => {
    button.addEventListener("click", () => command(button.dataset.action));
  });
  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || help.open) return;
    const typing = event.target instanceof Element && event.target.matches("textarea, input, select");
    if (event.key === "Escape") { if (typing) event.target.blur(); return; }
    if (typing) return;
    if (LABEL_KEYS[event.key]) { event.preventDefault(); queue("label", LABEL_KEYS[event.key]); }
    else if (ACTION_KEYS[event.key]) { event.preventDefault(); command(ACTION_KEYS[event.key]); }
  });
}

// -- the cell page's label form ----------------------------------------------------------------

function setUpCellLabel(section) {
  const status = document.getElementById("status");
  section.querySelectorAll("[data-cell-label]").forEach((button) => {
    button.addEventListener("click", async () => {
      const body = { item: section.dataset.item, model: section.dataset.model,
                     rater: document.getElementById("cell-rater").value,
                     label: button.dataset.cellLabel, note: document.getElementById("cell-note").value };
      try {
        await post("/api/cell-label", body);
        location.reload();
      } catch (error) {
        status.textContent = "Not saved: " + error.message;
        status.classList.add("bad");
      }
    });
  });
}

// -- the browse page's live progress -----------------------------------------------------------

function cellOf(text, numeric) {
  const td = document.createElement("td");
  td.textContent = text == null ? "" : String(text);
  if (numeric) td.className = "num";
  return td;
}

// The browse table is what the store held when the page was built; while a run writes (and
// once after it ends) the poll also counts the answers, and the page says how many are new.
function showNewAnswers(count) {
  const table = document.getElementById("cells");
  const notice = document.getElementById("new-answers");
  if (!table || !notice || count == null) return;
  const added = count - Number(table.dataset.answers);
  notice.hidden = added <= 0;
  setText("new-answers-text", added.toLocaleString("en") + " new answer" + (added === 1 ? "" : "s")
          + " since this page was built:");
  document.getElementById("new-answers-reload").href = location.href;
}

let runWasLive = false;

async function pollProgress(section) {
  try {
    const url = "/api/progress" + (runWasLive ? "?answers=1" : "");
    const response = await fetch(url, { credentials: "same-origin" });
    const data = await response.json();
    runWasLive = Boolean(data.models);
    showNewAnswers(data.answers);
    section.hidden = !data.models;
    if (data.models) {
      document.getElementById("live-rows").replaceChildren(...data.models.map((m) => {
        const row = document.createElement("tr");
        const state = m.stopped ? "stopped: " + m.stopped
          : m.cooling_down_s ? "cooling down " + Math.ceil(m.cooling_down_s) + " s" : "running";
        row.append(cellOf(m.model), cellOf(m.done, true), cellOf(m.total, true),
                   cellOf(Number(m.rate_per_s || 0).toFixed(1), true), cellOf(m.retries, true),
                   cellOf(m.rate_limited, true), cellOf(m.failed, true),
                   cellOf(m.in_flight + " / " + m.concurrency, true), cellOf(state));
        return row;
      }));
    }
  } catch (error) { /* the next poll tries again */ }
  setTimeout(() => pollProgress(section), 2000);
}

// -- the browse page's filters: an empty field is left out of the URL --------------------------

function setUpFilters(form) {
  const fields = () => form.querySelectorAll("input, select");
  form.addEventListener("submit", () => {
    fields().forEach((field) => { if (!field.value) field.disabled = true; });
  });
  // Back to this page from the results: every field usable again.
  window.addEventListener("pageshow", () => fields().forEach((field) => { field.disabled = false; }));
}

// -- the agreement page ------------------------------------------------------------------------

function setUpAgreement(live) {
  live.addEventListener("click", async (event) => {
    if (event.target.id !== "settle-agreed") return;
    event.target.disabled = true;
    const result = await post("/api/agreed");
    event.target.replaceWith(document.createTextNode("Written: " + result.written + " labels."));
  });
  setInterval(async () => {
    if (document.hidden || live.contains(document.activeElement)) return;
    const response = await fetch("/agree?fragment=1", { credentials: "same-origin" });
    if (response.ok) live.innerHTML = await response.text();  // server-rendered, escaped HTML
  }, 5000);
}

document.addEventListener("DOMContentLoaded", () => {
  const desk = document.getElementById("desk");
  if (desk) setUpDesk(desk);
  const cellLabel = document.getElementById("cell-label");
  if (cellLabel) setUpCellLabel(cellLabel);
  const live = document.getElementById("live");
  if (live) pollProgress(live);
  const filters = document.querySelector("form.filters");
  if (filters) setUpFilters(filters);
  const agree = document.getElementById("agree-live");
  if (agree) setUpAgreement(agree);
});
