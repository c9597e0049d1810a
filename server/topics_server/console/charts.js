// Small live charts: an SVG line over a Series of [time, value] points (no library).
const SVG = "http://www.w3.org/2000/svg";
const W = 240;
const H = 60;

/** An SVG sparkline of `series` (lib.js Series), labelled for screen readers with `label`. */
export function sparkline(series, label) {
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.setAttribute("class", "spark");
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", label);
  svg.setAttribute("preserveAspectRatio", "none");
  const pts = series.points.filter((p) => p[1] !== null && Number.isFinite(p[1]));
  const base = document.createElementNS(SVG, "line");
  base.setAttribute("x1", "0");
  base.setAttribute("x2", String(W));
  base.setAttribute("y1", String(H - 1));
  base.setAttribute("y2", String(H - 1));
  base.setAttribute("class", "spark-axis");
  svg.append(base);
  if (pts.length < 2) return svg;
  const t0 = pts[0][0];
  const t1 = pts[pts.length - 1][0];
  const max = Math.max(...pts.map((p) => p[1]), 0);
  const min = Math.min(...pts.map((p) => p[1]), 0);
  const span = max - min || 1;
  const x = (t) => ((t - t0) / (t1 - t0 || 1)) * W;
  const y = (v) => H - 2 - ((v - min) / span) * (H - 4);
  const line = document.createElementNS(SVG, "polyline");
  line.setAttribute("points", pts.map((p) => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(" "));
  line.setAttribute("class", "spark-line");
  svg.append(line);
  return svg;
}
