// crowdqrels dashboard: draws the page's Plotly figures, keeps fit status live, and drives the
// annotator table from the JSON API. No build step; plotly.min.js is served from the installed
// plotly package, to the pages that have figures only.
(function () {
  "use strict";

  function drawFigures() {
    var node = document.getElementById("figures");
    var figures = node ? JSON.parse(node.textContent || "{}") : {};
    if (typeof Plotly === "undefined") { figures = {}; }  // a page without figures has no Plotly
    document.querySelectorAll(".chart[data-figure]").forEach(function (div) {
      var spec = figures[div.dataset.figure];
      if (!spec) { div.remove(); return; }
      Plotly.newPlot(div, spec.data, spec.layout,
                     {responsive: true, displaylogo: false, displayModeBar: false})
        .then(function () { div.dataset.rendered = "true"; });
    });
  }

  // Jobs (fits, evaluations) that are queued or running: poll their API resource (data-job, or
  // GET /api/v1/aggregations/{a}), move the bar, reload the page once one has finished (its
  // results then render server-side).
  function pollFits() {
    var live = Array.prototype.slice.call(
      document.querySelectorAll("[data-status][data-aggregation], [data-status][data-job]"))
      .filter(function (el) {
        return el.dataset.status === "queued" || el.dataset.status === "running";
      });
    if (!live.length) { return; }
    var pending = live.length, finished = false;
    live.forEach(function (el) {
      fetch(el.dataset.job || "/api/v1/aggregations/" + el.dataset.aggregation,
            {headers: {accept: "application/json"}})
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (body) {
          if (!body) { return; }
          el.dataset.status = body.status;
          var status = el.querySelector(".status");
          if (status) { status.textContent = body.status; status.className = "status status-" + body.status; }
          var bar = el.querySelector(".bar");
          if (bar) { bar.style.width = (100 * body.progress.fraction).toFixed(1) + "%"; }
          var msg = el.querySelector(".progress-message");
          if (msg) { msg.textContent = body.progress.message || ""; }
          var elapsed = el.querySelector("#fit-elapsed");  // the fit's page: counts from its start
          if (elapsed && body.started_at) { elapsed.dataset.since = body.started_at; }
          if (["succeeded", "failed", "cancelled"].indexOf(body.status) >= 0) { finished = true; }
        })
        .catch(function () {})
        .then(function () {
          pending -= 1;
          if (pending === 0) {
            if (finished) { window.location.reload(); } else { window.setTimeout(pollFits, 1000); }
          }
        });
    });
  }

  function fmt(value, digits) {  // digits 0: a count
    if (value === null || value === undefined) { return "–"; }
    if (typeof value === "number" && digits !== 0) { return value.toFixed(digits || 3); }
    return String(value);
  }

  function annotatorTable() {
    var root = document.getElementById("annotator-table");
    if (!root) { return; }
    var state = {sort: "-competence", offset: 0, limit: 50, q: "", min: 0, kind: "", count: 0};
    var tbody = root.querySelector("tbody");
    var base = "/ui/collections/" + encodeURIComponent(root.dataset.collection) + "/annotators/";
    var timer = null;
    // the last column: the GP's noise variance, or an ordinal fit's spread (in extra)
    function last(r) {
      return root.dataset.last === "spread" ? (r.extra || {}).spread : r.noise_variance;
    }

    function load() {
      var params = new URLSearchParams({sort: state.sort, limit: state.limit, offset: state.offset,
                                        min_judgments: state.min});
      if (state.q) { params.set("q", state.q); }
      if (state.kind) { params.set("kind", state.kind); }
      root.dataset.loading = "true";
      fetch("/api/v1/aggregations/" + root.dataset.aggregation + "/annotators?" + params,
            {headers: {accept: "application/json"}})
        .then(function (r) { return r.json().then(function (b) { return [r.ok, b]; }); })
        .then(function (res) {
          var ok = res[0], body = res[1];
          tbody.innerHTML = "";
          if (!ok) {
            var tr = document.createElement("tr"), td = document.createElement("td");
            td.colSpan = 7; td.className = "error-box"; td.textContent = body.detail || "error";
            tr.appendChild(td); tbody.appendChild(tr); return;
          }
          state.count = body.count;
          if (!body.data.length) {  // a filter that matches nobody, or a page past the last
            var empty = document.createElement("tr"), cell = document.createElement("td");
            cell.colSpan = 7; cell.className = "muted empty";
            cell.textContent = state.count ? "No annotators on this page." :
              (state.q || state.min || state.kind ? "No annotator matches this filter." : "No annotators.");
            empty.appendChild(cell); tbody.appendChild(empty);
          }
          body.data.forEach(function (r) {
            var tr = document.createElement("tr");
            var link = document.createElement("a");
            link.href = base + encodeURIComponent(r.annotator) + "?aggregation=" + root.dataset.aggregation;
            link.textContent = r.annotator;
            var first = document.createElement("td"); first.appendChild(link);
            if (r.kind && r.kind !== "crowd") {  // an LLM judge or an expert (a judge file)
              var tag = document.createElement("span"); tag.className = "muted kind";
              tag.textContent = " " + r.kind; first.appendChild(tag);
            }
            tr.appendChild(first);
            [fmt(r.competence), fmt(r.n_judgments, 0), fmt(r.gold_accuracy), fmt(r.n_gold, 0),
             fmt(r.bias), fmt(last(r))].forEach(function (text) {
              var td = document.createElement("td"); td.className = "num"; td.textContent = text;
              tr.appendChild(td);
            });
            tbody.appendChild(tr);
          });
          var pages = Math.max(1, Math.ceil(state.count / state.limit));
          var page = Math.floor(state.offset / state.limit) + 1;
          document.getElementById("annotator-page").textContent = "page " + page + " of " + pages;
          document.getElementById("annotator-count").textContent = state.count + " annotators";
          document.getElementById("annotator-prev").disabled = state.offset === 0;
          document.getElementById("annotator-next").disabled = state.offset + state.limit >= state.count;
        })
        .catch(function (e) { console.warn("annotator listing", e); })
        .then(function () { root.dataset.loading = "false"; });
    }

    root.querySelectorAll("th[data-sort]").forEach(function (th) {
      th.addEventListener("click", function () {
        var name = th.dataset.sort;
        var desc = state.sort === name ? true : (state.sort === "-" + name ? false : name !== "annotator");
        state.sort = (desc ? "-" : "") + name;
        state.offset = 0;
        root.querySelectorAll("th[data-sort]").forEach(function (o) {
          o.className = ""; o.removeAttribute("aria-sort");
        });
        th.className = desc ? "sorted-desc" : "sorted-asc";
        th.setAttribute("aria-sort", desc ? "descending" : "ascending");
        load();
      });
    });
    document.getElementById("annotator-prev").addEventListener("click", function () {
      state.offset = Math.max(0, state.offset - state.limit); load();
    });
    document.getElementById("annotator-next").addEventListener("click", function () {
      if (state.offset + state.limit < state.count) { state.offset += state.limit; load(); }
    });
    function filtersChanged() {
      window.clearTimeout(timer);
      timer = window.setTimeout(function () {
        state.q = document.getElementById("annotator-q").value.trim();
        state.min = Math.max(0, parseInt(document.getElementById("annotator-min").value, 10) || 0);
        state.kind = document.getElementById("annotator-kind").value;
        state.offset = 0; load();
      }, 250);
    }
    document.getElementById("annotator-q").addEventListener("input", filtersChanged);
    document.getElementById("annotator-min").addEventListener("input", filtersChanged);
    document.getElementById("annotator-kind").addEventListener("change", filtersChanged);
    load();
  }

  // The start-fit form: the chosen method's parameters with their defaults.
  function fitForm() {
    var select = document.getElementById("fit-method");
    var params = document.getElementById("fit-params");
    if (!select || !params) { return; }
    function fill() {
      var option = select.options[select.selectedIndex];
      params.value = option ? option.dataset.defaults : "{}";
    }
    select.addEventListener("change", fill);
    if (!params.value) { fill(); }
  }

  // Empty threshold: leave it out of the download URL.
  function downloadForm() {
    var form = document.getElementById("download-form");
    if (!form) { return; }
    form.addEventListener("submit", function () {
      var t = document.getElementById("download-threshold");
      if (t && !t.value) { t.disabled = true; window.setTimeout(function () { t.disabled = false; }, 0); }
    });
  }

  // The running fit's page: how long it has been queued or running, every second (data-since:
  // an ISO time in UTC, moved to started_at by pollFits; the word: #fit-status's data-status).
  function fitElapsed() {
    var node = document.getElementById("fit-elapsed");
    var status = document.getElementById("fit-status");
    if (!node || !status) { return; }
    function duration(s) {
      if (s < 60) { return s + " s"; }
      if (s < 3600) { return Math.floor(s / 60) + " min " + ("0" + s % 60).slice(-2) + " s"; }
      return Math.floor(s / 3600) + " h " + ("0" + Math.floor(s % 3600 / 60)).slice(-2) + " min";
    }
    function tick() {
      var word = status.dataset.status;
      if (word !== "queued" && word !== "running") { return; }  // the page reloads when done
      // the API's times are UTC, with or without an offset: read the first 19 characters as UTC
      var since = Date.parse(node.dataset.since.slice(0, 19) + "Z");
      if (!isNaN(since)) {
        node.textContent = word + " for " + duration(Math.max(0, Math.round((Date.now() - since) / 1000)));
      }
      window.setTimeout(tick, 1000);
    }
    tick();
  }

  // A choice that needs confirming (the gold form's "replace": data-confirm on its option) or a
  // form that does (a key's revoke button: data-confirm on the form) asks before the form goes;
  // declined, nothing is sent and the form stays usable (registered before submitOnce, whose
  // listener it stops).
  function confirmChoices() {
    Array.prototype.forEach.call(document.querySelectorAll("form"), function (form) {
      form.addEventListener("submit", function (event) {
        if (form.dataset.confirm && !window.confirm(form.dataset.confirm)) {
          event.preventDefault(); event.stopImmediatePropagation(); return;
        }
        var chosen = Array.prototype.filter.call(form.querySelectorAll("select"), function (s) {
          var option = s.options[s.selectedIndex];
          return option && option.dataset.confirm;
        });
        for (var i = 0; i < chosen.length; i++) {
          if (!window.confirm(chosen[i].options[chosen[i].selectedIndex].dataset.confirm)) {
            event.preventDefault(); event.stopImmediatePropagation(); return;
          }
        }
      });
    });
  }

  // The evaluation form: gold is fixed qrels, so its number of draws does not apply.
  function evaluationForm() {
    var source = document.getElementById("evaluation-source");
    var samples = document.querySelector("#evaluation-form input[name=samples]");
    if (!source || !samples) { return; }
    function sync() { samples.disabled = source.value === "gold"; }
    source.addEventListener("change", sync);
    sync();
  }

  // A form that starts something (a fit, an upload, a round) is sent once: a double click or a
  // second Enter would start it twice. Its buttons stay disabled until the answer replaces the
  // page; coming back to the page through the history enables them again.
  function submitOnce() {
    Array.prototype.forEach.call(document.querySelectorAll("form[method=post]"), function (form) {
      form.addEventListener("submit", function (event) {
        if (form.dataset.sent) { event.preventDefault(); return; }
        form.dataset.sent = "1";
        window.setTimeout(function () {  // after the browser has read the form
          Array.prototype.forEach.call(form.querySelectorAll("button"), function (b) { b.disabled = true; });
        }, 0);
      });
    });
    window.addEventListener("pageshow", function (event) {
      if (!event.persisted) { return; }
      Array.prototype.forEach.call(document.querySelectorAll("form[data-sent]"), function (form) {
        delete form.dataset.sent;
        Array.prototype.forEach.call(form.querySelectorAll("button"), function (b) { b.disabled = false; });
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    confirmChoices();
    submitOnce();
    drawFigures();
    annotatorTable();
    fitForm();
    downloadForm();
    evaluationForm();
    fitElapsed();
    pollFits();
  });
})();
