// ki report's own script: draws a page's plot with Chart.js from the JSON
// the page carries (#ki-data), and filters the index's table of groups.
// It reads no file and turns no string into HTML: text goes into the page
// through textContent and Chart.js's canvas only.
(function () {
  'use strict';

  function pageData() {
    var el = document.getElementById('ki-data');
    return el ? JSON.parse(el.textContent) : null;
  }

  // Four significant digits and a scaled unit, as ki prints quantities.
  function fmt(v, unit) {
    if (typeof v !== 'number' || !isFinite(v)) return String(v);
    if (unit === 'ns') {
      var a = Math.abs(v);
      if (a < 1e3) return v.toPrecision(4) + ' ns';
      if (a < 1e6) return (v / 1e3).toPrecision(4) + ' µs';
      if (a < 1e9) return (v / 1e6).toPrecision(4) + ' ms';
      return (v / 1e9).toPrecision(4) + ' s';
    }
    return v.toPrecision(4) + (unit ? ' ' + unit : '');
  }

  function colour(i, alpha) {
    return 'hsla(' + ((i * 137) % 360) + ', 65%, 45%, ' + alpha + ')';
  }

  // Log scale when the values span more than a factor of `k`.
  function scaleType(values, k) {
    var pos = values.filter(function (v) { return v > 0; });
    if (pos.length < 2) return 'linear';
    var lo = Math.min.apply(null, pos), hi = Math.max.apply(null, pos);
    return hi / lo > k ? 'logarithmic' : 'linear';
  }

  function follow(chart, hrefOf) {
    return function (event, elements) {
      if (!elements.length) return;
      var href = hrefOf(elements[0].datasetIndex, elements[0].index);
      if (href) window.location.href = href;
    };
  }

  function groupPlot(d, canvas) {
    var pts = d.points;
    var values = pts.map(function (p) { return p.value; });
    var all = values.slice();
    pts.forEach(function (p) { if (p.interval) all.push(p.interval[0], p.interval[1]); });
    return new Chart(canvas, {
      data: {
        labels: pts.map(function (p) { return p.label; }),
        datasets: [
          { type: 'bar', label: '95% interval', data: pts.map(function (p) { return p.interval || null; }),
            backgroundColor: colour(1, 0.35), borderColor: colour(1, 0.9), borderWidth: 1, barPercentage: 0.5 },
          { type: 'line', label: 'value (' + d.unit + ')', data: values, showLine: false, pointRadius: 5,
            pointHoverRadius: 7, backgroundColor: colour(0, 0.9), borderColor: colour(0, 0.9) }
        ]
      },
      options: {
        animation: false,
        maintainAspectRatio: false,
        scales: {
          y: { type: scaleType(all, 20), title: { display: true, text: 'value (lower is better)' },
               ticks: { callback: function (v) { return fmt(Number(v), d.unit); } } },
          x: { ticks: { autoSkip: true, maxRotation: 60 } }
        },
        plugins: {
          tooltip: { callbacks: { label: function (c) {
            var p = pts[c.dataIndex];
            return c.datasetIndex === 0 && p.interval
              ? '95% ' + fmt(p.interval[0], d.unit) + ' – ' + fmt(p.interval[1], d.unit)
              : fmt(p.value, d.unit);
          } } }
        },
        onClick: follow(null, function (ds, i) { return pts[i].href; })
      }
    });
  }

  function operationPlot(d, canvas) {
    var xs = [], ys = [];
    d.lines.forEach(function (l) { l.points.forEach(function (p) { xs.push(p.x); ys.push(p.y); }); });
    return new Chart(canvas, {
      type: 'scatter',
      data: {
        datasets: d.lines.map(function (l, i) {
          return { label: l.label, data: l.points.map(function (p) { return { x: p.x, y: p.y }; }), showLine: true,
                   borderColor: colour(i, 0.9), backgroundColor: colour(i, 0.9), pointRadius: 3, borderWidth: 1.5 };
        })
      },
      options: {
        animation: false,
        maintainAspectRatio: false,
        scales: {
          x: { type: scaleType(xs, 16), title: { display: true, text: d.axis } },
          y: { type: scaleType(ys, 20), title: { display: true, text: 'value (lower is better)' },
               ticks: { callback: function (v) { return fmt(Number(v), d.unit); } } }
        },
        plugins: {
          legend: { position: 'right', labels: { boxWidth: 12 } },
          tooltip: { callbacks: { label: function (c) {
            var p = d.lines[c.datasetIndex].points[c.dataIndex];
            return d.lines[c.datasetIndex].label + ': ' + fmt(p.y, d.unit) + ' at ' + d.axis + ' = ' + p.x;
          } } }
        },
        onClick: follow(null, function (ds, i) { return d.lines[ds].points[i].href; })
      }
    });
  }

  // Values over time (x: milliseconds since 1970), a stepped line of each
  // segment's level, the change points marked and, on a series page, each
  // run's interval as a vertical bar. A click on a run opens its page.
  function historyPlot(h, canvas) {
    var ys = [];
    h.series.forEach(function (s) {
      s.points.forEach(function (p) { ys.push(p.y); });
      (s.intervals || []).forEach(function (p) { if (p.y !== null) ys.push(p.y); });
    });
    var sets = [];
    h.series.forEach(function (s, i) {
      sets.push({ label: s.label, data: s.points.map(function (p) { return { x: p.x, y: p.y }; }), showLine: false,
                  pointRadius: 3, pointHoverRadius: 6, backgroundColor: colour(i, 0.8), borderColor: colour(i, 0.8),
                  hrefs: s.points.map(function (p) { return p.href; }) });
      if (s.intervals && s.intervals.length)
        sets.push({ label: s.label + ' · 95% interval', data: s.intervals, showLine: true, pointRadius: 0,
                    spanGaps: false, borderColor: colour(i, 0.35), borderWidth: 1 });
      if (s.levels.length)
        sets.push({ label: s.label + ' · level', data: s.levels, showLine: true, pointRadius: 0, spanGaps: false,
                    borderColor: colour(i, 0.5), borderWidth: 2 });
      if (s.changes.length)
        sets.push({ label: s.label + ' · change', data: s.changes.map(function (p) { return { x: p.x, y: p.y }; }),
                    showLine: false, pointStyle: 'triangle', pointRadius: 8, backgroundColor: colour(i, 1),
                    borderColor: colour(i, 1), hrefs: s.changes.map(function (p) { return p.href; }) });
    });
    return new Chart(canvas, {
      type: 'scatter',
      data: { datasets: sets },
      options: {
        animation: false,
        maintainAspectRatio: false,
        scales: {
          x: { type: 'linear', ticks: { callback: function (v) { return new Date(Number(v)).toISOString().slice(0, 10); } } },
          y: { type: scaleType(ys, 20), title: { display: true, text: 'value (lower is better)' },
               ticks: { callback: function (v) { return fmt(Number(v), h.unit); } } }
        },
        plugins: {
          tooltip: { callbacks: { label: function (c) {
            return c.dataset.label + ': ' + fmt(c.parsed.y, h.unit) + ' on ' + new Date(c.parsed.x).toISOString().slice(0, 10);
          } } }
        },
        onClick: function (event, elements, chart) {
          if (!elements.length) return;
          var ds = chart.data.datasets[elements[0].datasetIndex];
          var href = ds.hrefs && ds.hrefs[elements[0].index];
          if (href) window.location.href = href;
        }
      }
    });
  }

  // Two runs' samples over one set of bins: the share of each run's
  // samples in each bin, side by side.
  function rerunPlot(d, canvas) {
    var labels = [];
    for (var b = 0; b + 1 < d.edges.length; b++) labels.push(fmt((d.edges[b] + d.edges[b + 1]) / 2, d.unit));
    return new Chart(canvas, {
      type: 'bar',
      data: {
        labels: labels,
        datasets: d.sets.map(function (s, i) {
          return { label: s.label, data: s.percent, backgroundColor: colour(i, 0.55), borderColor: colour(i, 0.9),
                   borderWidth: 1, categoryPercentage: 0.9, barPercentage: 1.0 };
        })
      },
      options: {
        animation: false,
        maintainAspectRatio: false,
        scales: {
          x: { title: { display: true, text: 'sample (bin centre)' }, ticks: { autoSkip: true, maxRotation: 60 } },
          y: { beginAtZero: true, title: { display: true, text: '% of the run\'s samples' } }
        },
        plugins: {
          tooltip: { callbacks: {
            title: function (items) {
              var b = items[0].dataIndex;
              return fmt(d.edges[b], d.unit) + ' – ' + fmt(d.edges[b + 1], d.unit);
            },
            label: function (c) { return c.dataset.label + ': ' + c.parsed.y.toFixed(1) + '%'; }
          } }
        }
      }
    });
  }

  function drawPlot() {
    var d = pageData();
    if (!d || typeof Chart === 'undefined') return;
    var canvas = document.getElementById('plot');
    if (canvas) {
      var chart = d.plot === 'group' ? groupPlot(d, canvas)
        : d.plot === 'operation' ? operationPlot(d, canvas)
        : d.plot === 'series' ? historyPlot(d, canvas)
        : d.plot === 'rerun' ? rerunPlot(d, canvas) : null;
      if (chart) window.kiChart = chart;
    }
    var history = document.getElementById('history');
    if (d.history && history && history.tagName === 'CANVAS') window.kiHistoryChart = historyPlot(d.history, history);
  }

  function filterGroups() {
    var table = document.getElementById('groups');
    var text = document.getElementById('filter');
    var hw = document.getElementById('filter-hw');
    var kind = document.getElementById('filter-kind');
    var count = document.getElementById('filter-count');
    if (!table || !text) return;
    var rows = Array.prototype.slice.call(table.tBodies[0].rows);
    var words = rows.map(function (r) { return r.textContent.toLowerCase(); });
    function apply() {
      var q = text.value.trim().toLowerCase().split(/\s+/).filter(Boolean);
      var shown = 0;
      rows.forEach(function (r, i) {
        var ok = (!hw.value || r.dataset.hw === hw.value) && (!kind.value || r.dataset.kind === kind.value) &&
                 q.every(function (w) { return words[i].indexOf(w) >= 0; });
        r.hidden = !ok;
        if (ok) shown++;
      });
      count.textContent = shown + ' of ' + rows.length + ' groups';
    }
    [text, hw, kind].forEach(function (el) { el.addEventListener('input', apply); });
    document.querySelector('form.filters').addEventListener('submit', function (e) { e.preventDefault(); });
    apply();
  }

  drawPlot();
  filterGroups();
})();
