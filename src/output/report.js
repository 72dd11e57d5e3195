// report.html's charts (part of the output, embedded by html.rs before uPlot): each spec of
// the JSON block #charts, a plot::Chart, drawn with uPlot into its <figure>, in place of the
// static SVG kept there for a browser without scripts. Drag across a chart to zoom, double-click
// to reset; hover for values; the button under a latency chart switches log and linear.
// The page keeps score for the headless-browser test: body[data-errors] counts errors (script
// errors and console errors), body[data-charts-drawn] the charts uPlot has drawn, against
// body[data-charts-expected]. Fetches nothing.
(function () {
  "use strict";
  var body = document.body;
  var errors = [];
  function fail(what) {
    errors.push(String(what));
    body.setAttribute("data-errors", String(errors.length));
    var box = document.getElementById("chart-errors");
    if (box) {
      box.hidden = false;
      box.textContent = "Chart errors: " + errors.join(" | ");
    }
  }
  window.addEventListener("error", function (e) {
    fail(e.message || "script error");
  });
  window.addEventListener("unhandledrejection", function (e) {
    fail("unhandled rejection: " + e.reason);
  });
  var consoleError = console.error;
  console.error = function () {
    fail(Array.prototype.join.call(arguments, " "));
    return consoleError.apply(console, arguments);
  };

  var COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"];
  var drawn = {};

  function fmt(v) {
    if (v == null || !isFinite(v)) return "–";
    var a = Math.abs(v);
    if (a >= 100) return v.toFixed(0);
    if (a >= 10) return v.toFixed(1).replace(/\.0$/, "");
    if (a >= 0.01 || a === 0) return v.toFixed(3).replace(/\.?0+$/, "");
    if (a >= 0.001) return String(parseFloat(v.toPrecision(2)));
    return v.toExponential(0);
  }

  // An axis' tick labels: the log axis' filter leaves null where no label goes.
  function ticks(u, vals) {
    return vals.map(function (v) { return v == null ? "" : fmt(v); });
  }

  function positive(v) {
    return v != null && isFinite(v) && v > 0;
  }

  // uPlot's shape: one x array, each series aligned on it (null where it has no point). A
  // lone series keeps its own points, repeated x included (a CDF's steps, a scatter's ties).
  // A shared x range (plot::share_x) is two more x values with no point on them.
  function aligned(spec, logX, logY) {
    var keepX = function (x) { return !logX || positive(x); };
    var keepY = function (y) { return logY && !positive(y) ? null : y; };
    var ends = spec.x_range && !logX ? spec.x_range : [];
    if (spec.series.length === 1) {
      var pts = spec.series[0][1].filter(function (p) { return keepX(p[0]); });
      if (ends.length && pts.length) {
        if (ends[0] < pts[0][0]) pts.unshift([ends[0], null]);
        if (ends[1] > pts[pts.length - 1][0]) pts.push([ends[1], null]);
      }
      return [pts.map(function (p) { return p[0]; }), pts.map(function (p) { return keepY(p[1]); })];
    }
    var xs = ends.slice();
    spec.series.forEach(function (s) {
      s[1].forEach(function (p) { if (keepX(p[0])) xs.push(p[0]); });
    });
    xs.sort(function (a, b) { return a - b; });
    xs = xs.filter(function (x, i) { return i === 0 || x !== xs[i - 1]; });
    var data = [xs];
    spec.series.forEach(function (s) {
      var at = new Map();
      s[1].forEach(function (p) { at.set(p[0], keepY(p[1])); });
      data.push(xs.map(function (x) { return at.has(x) ? at.get(x) : null; }));
    });
    return data;
  }

  // Log only where the data allow it: every value shown above 0, and more than one.
  function canLog(values) {
    var v = values.filter(function (x) { return x != null; });
    return v.length > 1 && v.every(positive) && Math.min.apply(null, v) < Math.max.apply(null, v);
  }

  // A log axis of sorted values starts at their 1st percentile when a few tiny ones (a
  // zero gap drawn at 1 ns) would stretch it over decades; double-click shows them all.
  function logStart(xs) {
    var p1 = xs[Math.floor(xs.length / 100)];
    return xs.length > 100 && p1 / xs[0] > 100 ? p1 : null;
  }

  function yRange(spec, logY) {
    return function (u, min, max) {
      spec.hlines.forEach(function (h) {
        if (!logY || positive(h[1])) {
          min = min == null ? h[1] : Math.min(min, h[1]);
          max = max == null ? h[1] : Math.max(max, h[1]);
        }
      });
      if (min == null || max == null) return [0, 1];
      if (logY) return uPlot.rangeLog(min, max, 10, true);
      return uPlot.rangeNum(Math.min(0, min), max, 0.1, true);
    };
  }

  // The SLO bounds (red, across) and the knee and crossing (grey, upright), with their names.
  function drawReferences(spec) {
    return function (u) {
      var ctx = u.ctx;
      var box = u.bbox;
      ctx.save();
      ctx.font = Math.round(12 * devicePixelRatio) + "px sans-serif";
      ctx.lineWidth = devicePixelRatio;
      spec.hlines.forEach(function (h) {
        var y = u.valToPos(h[1], "y", true);
        if (!isFinite(y) || y < box.top || y > box.top + box.height) return;
        ctx.strokeStyle = ctx.fillStyle = "#c80000";
        ctx.beginPath();
        ctx.moveTo(box.left, y);
        ctx.lineTo(box.left + box.width, y);
        ctx.stroke();
        ctx.fillText(h[0], box.left + 4, y - 4);
      });
      spec.vlines.forEach(function (v) {
        var x = u.valToPos(v[1], "x", true);
        if (!isFinite(x) || x < box.left || x > box.left + box.width) return;
        ctx.strokeStyle = ctx.fillStyle = "#5a5a5a";
        ctx.beginPath();
        ctx.moveTo(x, box.top);
        ctx.lineTo(x, box.top + box.height);
        ctx.stroke();
        ctx.fillText(v[0], x + 4, box.top + 14 * devicePixelRatio);
      });
      ctx.restore();
    };
  }

  function series(spec) {
    return spec.series.map(function (s, i) {
      var color = COLORS[i % COLORS.length];
      var out = { label: s[0], stroke: color, width: 2, spanGaps: true, value: function (u, v) { return fmt(v); } };
      if (spec.scatter) {
        out.paths = function () { return null; };
        out.points = { show: true, size: 3, width: 0, fill: color, stroke: color };
      } else {
        out.points = { show: s[1].length <= 60 };
      }
      return out;
    });
  }

  function options(spec, el, logX, logY) {
    var width = Math.max(320, el.clientWidth - 4);
    return {
      title: spec.title,
      width: width,
      height: Math.round(Math.min(380, Math.max(240, width * 0.5))),
      scales: {
        x: { time: false, distr: logX ? 3 : 1, log: 10 },
        y: { distr: logY ? 3 : 1, log: 10, range: yRange(spec, logY) }
      },
      axes: [
        { label: spec.x_label, values: ticks },
        { label: spec.y_label, size: 60, values: ticks }
      ],
      series: [{ label: spec.x_label, value: function (u, v) { return fmt(v); } }].concat(series(spec)),
      cursor: { drag: { x: true, y: false }, points: { show: !spec.scatter } },
      legend: { live: true },
      hooks: {
        draw: [drawReferences(spec), function () { markDrawn(el); }],
        ready: [function (u) {
          var from = logX && logStart(u.data[0]);
          if (from) u.setScale("x", { min: from, max: u.data[0][u.data[0].length - 1] });
        }]
      }
    };
  }

  function markDrawn(el) {
    if (drawn[el.id]) return;
    var canvas = el.querySelector("canvas");
    if (!canvas || canvas.width === 0 || canvas.height === 0) return;
    drawn[el.id] = true;
    body.setAttribute("data-charts-drawn", String(Object.keys(drawn).length));
  }

  function build(spec, el, holder, log) {
    var logX = log && spec.log_x;
    var logY = log && spec.log_y;
    var data = aligned(spec, logX, logY);
    if (logX && !canLog(data[0])) logX = false;
    if (logY && !canLog([].concat.apply([], data.slice(1)))) logY = false;
    data = aligned(spec, logX, logY);
    holder.textContent = "";
    return new uPlot(options(spec, el, logX, logY), data, holder);
  }

  function chart(spec, el) {
    var holder = el.querySelector(".live");
    var fallback = el.querySelector(".static");
    var log = true;
    var plot = build(spec, el, holder, log);
    if (fallback) fallback.hidden = true;
    if (spec.log_x || spec.log_y) {
      var button = document.createElement("button");
      button.type = "button";
      button.textContent = "linear axis";
      button.addEventListener("click", function () {
        log = !log;
        plot.destroy();
        plot = build(spec, el, holder, log);
        button.textContent = log ? "linear axis" : "log axis";
      });
      el.querySelector("figcaption").prepend(button);
    }
  }

  window.addEventListener("load", function () {
    body.setAttribute("data-errors", String(errors.length));
    body.setAttribute("data-charts-drawn", "0");
    var specs = JSON.parse(document.getElementById("charts").textContent);
    specs.forEach(function (spec, i) {
      try {
        chart(spec, document.getElementById("chart-" + i));
      } catch (e) {
        fail(spec.title + ": " + (e && e.message ? e.message : e));
      }
    });
  });
})();
