/* scansnap.js: the book's page behaviour (issue 26), loaded deferred after MathJax on every page
 * (_ext/scansnap_pages.py). Styles in scansnap.css; checked by tests/test_browser.py.
 *
 * 1. MathJax 2's Hub.Queue, served by MathJax 3: the widget manager (html-manager 1.x) typesets
 *    widget labels and HTML widgets with MathJax.Hub.Queue(["Typeset", MathJax.Hub, el]); the
 *    page runs MathJax 3, which has no Hub ("Cannot read properties of undefined (reading
 *    'Queue')"). The shim typesets the element with MathJax 3 once it has started.
 * 2. Scroll cues: a box that scrolls sideways (a wide display equation, a figure kept legible on
 *    a phone, a wide output) fades at each edge where more lies beyond (classes scroll-l/scroll-r).
 * 3. A tap on a figure that scrolls fits it to the screen; a second tap shows it legible again.
 * 4. Wide tables (4 columns or more, or wider than the column, with a header) read as cards on a
 *    phone: each cell carries its column's name (data-label) for the CSS to print beside it.
 */
(function () {
  "use strict";

  // ---- 1. MathJax.Hub for the widget manager ------------------------------------------
  function installHub() {
    var MJ = window.MathJax;
    if (!MJ || !MJ.version || MJ.Hub) return !!(MJ && MJ.Hub);
    var ready = function () { return (MJ.startup && MJ.startup.promise) || Promise.resolve(); };
    MJ.Hub = {
      Queue: function () {
        var jobs = Array.prototype.slice.call(arguments);
        return ready().then(function () {
          jobs.forEach(function (job) {
            if (typeof job === "function") { job(); return; }
            if (Array.isArray(job) && job[0] === "Typeset" && MJ.typesetPromise) {
              var el = job[2];
              MJ.typesetPromise(el && el.nodeType === 1 ? [el] : undefined)
                .then(cueAll).catch(function (err) { console.info("MathJax: " + (err && err.message || err)); });
            }
          });
        });
      },
    };
    return true;
  }
  installHub();

  // ---- 2. scroll cues -----------------------------------------------------------------
  var SCROLLERS = 'mjx-container[jax="CHTML"][display="true"], .scansnap-fig, article pre, ' +
                  ".scansnap-panel .scansnap-figure, .yzlive-panel .yz-figbox, .scansnap-scroll, " +
                  "div.cell_output .output, article table, .pst-scrollable-table-container";
  var watched = typeof WeakSet !== "undefined" ? new WeakSet() : null;
  var resizeObs = window.ResizeObserver ? new ResizeObserver(function (es) { es.forEach(function (e) { cue(e.target); }); }) : null;

  // A tagged display equation wider than its box: MathJax centres it between two tag-wide margins
  // and sets the tag at the far right, out of sight until the reader scrolls to it. Then the tag
  // goes to the left edge, in view (where LaTeX's leqno sets it), and the right margin goes.
  function tagFit(el) {
    if (el.tagName !== "MJX-CONTAINER" || !el.querySelector("mjx-labels")) return;
    el.classList.remove("tag-left");
    if (el.scrollWidth - el.clientWidth > 1) el.classList.add("tag-left");
  }

  function cue(el) {
    tagFit(el);
    var over = el.scrollWidth - el.clientWidth > 1;
    var left = over && el.scrollLeft > 1;
    var right = over && el.scrollLeft + el.clientWidth < el.scrollWidth - 1;
    el.classList.toggle("scroll-l", left);
    el.classList.toggle("scroll-r", right);
    el.classList.toggle("scrolls", over);
  }

  function watch(el) {
    if (watched) { if (watched.has(el)) return; watched.add(el); }
    el.addEventListener("scroll", function () { cue(el); }, { passive: true });
    if (resizeObs) resizeObs.observe(el);
  }

  function cueAll() {
    var els = document.querySelectorAll(SCROLLERS);
    for (var i = 0; i < els.length; i++) { watch(els[i]); cue(els[i]); }
  }

  // ---- 3. tap to fit a figure ---------------------------------------------------------
  document.addEventListener("click", function (ev) {
    var box = ev.target && ev.target.closest && ev.target.closest(".scansnap-fig");
    if (!box || ev.target.closest("a")) return;
    if (!box.classList.contains("scrolls") && !box.classList.contains("is-fit")) return;
    box.classList.toggle("is-fit");
    box.setAttribute("aria-expanded", box.classList.contains("is-fit") ? "false" : "true");
    cue(box);
  });

  // ---- 4. tables as cards on a phone --------------------------------------------------
  // A table with a header becomes cards below PHONE px when it has 4 columns or more, or when it
  // is wider than its column (measured in its table layout); the CSS draws them.
  var PHONE = 600;
  function cards() {
    var tables = document.querySelectorAll("article table, .bd-article table");
    for (var t = 0; t < tables.length; t++) {
      var table = tables[t];
      if (table.closest(".jupyter-widgets, .yzlive-panel")) continue;
      var head = table.tHead && table.tHead.rows[0];
      if (!head || head.cells.length < 2) continue;
      if (!table.hasAttribute("data-cards")) {
        var names = Array.prototype.map.call(head.cells, function (c) { return c.textContent.trim(); });
        Array.prototype.forEach.call(table.tBodies, function (body) {
          Array.prototype.forEach.call(body.rows, function (row) {
            for (var c = 0; c < row.cells.length && c < names.length; c++) {
              row.cells[c].setAttribute("data-label", names[c]);
              if (!row.cells[c].textContent.trim() && !row.cells[c].querySelector("img, svg, mjx-container"))
                row.cells[c].setAttribute("data-empty", "");          // a card leaves an empty field out
            }
          });
        });
        table.setAttribute("data-cards", head.cells.length >= 4 ? "always" : "if-wide");
      }
      var card = false;
      if (window.innerWidth <= PHONE) {
        if (table.getAttribute("data-cards") === "always") card = true;
        else {
          table.classList.remove("scansnap-cards");
          var box = table.parentElement;
          card = table.scrollWidth > box.clientWidth + 1 || table.getBoundingClientRect().width > box.getBoundingClientRect().width + 1;
        }
      }
      table.classList.toggle("scansnap-cards", card);
    }
  }
  function start() {
    cards();
    cueAll();
    var t = null;
    window.addEventListener("resize", function () { clearTimeout(t); t = setTimeout(function () { cards(); cueAll(); }, 100); });
    var MJ = window.MathJax;
    if (MJ && MJ.startup && MJ.startup.promise) MJ.startup.promise.then(cueAll);
    // widgets render after the page's load event; their figure boxes need cues too (only added
    // elements that are or hold a scroll box count: a live panel's status text changes often)
    if (window.MutationObserver) {
      var pending = false, root = document.querySelector("main") || document.body;
      new MutationObserver(function (records) {
        if (pending) return;
        var hit = records.some(function (r) {
          return Array.prototype.some.call(r.addedNodes, function (n) {
            return n.nodeType === 1 && !n.closest(".yzlive-panel") && (n.matches(SCROLLERS) || !!n.querySelector(SCROLLERS));
          });
        });
        if (!hit) return;
        pending = true;
        setTimeout(function () { pending = false; cueAll(); }, 100);
      }).observe(root, { childList: true, subtree: true });
    }
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
  window.addEventListener("load", function () { installHub(); cueAll(); });
})();
