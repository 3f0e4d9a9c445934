/**
 * A small stacked bar chart in plain SVG (no chart library). Bar heights are geometry only: every
 * figure shown as text comes from the caller's exact strings (the table beside each chart).
 * The SVG is one image with a text summary (role=img, aria-label); the legend names each colour.
 */
import { useId } from 'preact/hooks';

export interface ChartSeries {
  name: string;
  values: readonly number[];
}

/** Distinct on white and to most colour-vision deficiencies (Okabe-Ito, darkened where needed). */
export const PALETTE = [
  '#0b57d0',
  '#d55e00',
  '#009e73',
  '#cc79a7',
  '#8a6d00',
  '#56b4e9',
  '#4a5562',
  '#000000',
];

const W = 900;
const H = 260;
const M = { top: 12, right: 12, bottom: 44, left: 72 };

const niceMax = (v: number): number => {
  if (v <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * p >= v) return m * p;
  return 10 * p;
};

export const BarChart = (props: {
  title: string;
  labels: readonly string[];
  series: readonly ChartSeries[];
  /** What a screen reader hears instead of the picture. */
  summary: string;
  formatTick: (v: number) => string;
}) => {
  const id = useId();
  const n = props.labels.length;
  const totals = props.labels.map((_, i) =>
    props.series.reduce((s, x) => s + Math.max(0, x.values[i] ?? 0), 0),
  );
  const max = niceMax(Math.max(0, ...totals));
  const plotW = W - M.left - M.right;
  const plotH = H - M.top - M.bottom;
  const slot = n > 0 ? plotW / n : plotW;
  const barW = Math.max(1, Math.min(48, slot * 0.75));
  const y = (v: number) => M.top + plotH - (v / max) * plotH;
  const every = Math.max(1, Math.ceil(n / 12));
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => f * max);
  return (
    <figure class="qp-chart">
      <p class="chart-title" aria-hidden="true">
        {props.title}
      </p>
      <svg
        class="chart"
        viewBox={`0 0 ${W} ${H}`}
        role="img"
        aria-labelledby={`${id}-t ${id}-d`}
        preserveAspectRatio="xMidYMid meet"
      >
        <title id={`${id}-t`}>{props.title}</title>
        <desc id={`${id}-d`}>{props.summary}</desc>
        {ticks.map((t) => (
          <g key={t}>
            <line x1={M.left} x2={W - M.right} y1={y(t)} y2={y(t)} stroke="#c9d1d9" stroke-width="1" />
            <text x={M.left - 6} y={y(t) + 4} text-anchor="end">
              {props.formatTick(t)}
            </text>
          </g>
        ))}
        {props.labels.map((label, i) => {
          const x = M.left + slot * i + (slot - barW) / 2;
          let acc = 0;
          return (
            <g key={label}>
              {props.series.map((s, k) => {
                const v = Math.max(0, s.values[i] ?? 0);
                if (v === 0) return null;
                const top = y(acc + v);
                const h = y(acc) - top;
                acc += v;
                return (
                  <rect
                    key={s.name}
                    x={x}
                    y={top}
                    width={barW}
                    height={Math.max(0.5, h)}
                    fill={PALETTE[k % PALETTE.length]}
                  >
                    <title>{`${label} · ${s.name}: ${props.formatTick(v)}`}</title>
                  </rect>
                );
              })}
              {i % every === 0 ? (
                <text x={x + barW / 2} y={H - M.bottom + 16} text-anchor="middle">
                  {label.length > 10 ? label.slice(5) : label}
                </text>
              ) : null}
            </g>
          );
        })}
        <line x1={M.left} x2={W - M.right} y1={y(0)} y2={y(0)} stroke="#1b1f24" stroke-width="1" />
      </svg>
      {props.series.length > 1 ? (
        <figcaption>
          <ul class="chart-legend" aria-label={`${props.title}: legend`}>
            {props.series.map((s, k) => (
              <li key={s.name}>
                <span
                  class="chart-swatch"
                  style={{ background: PALETTE[k % PALETTE.length] }}
                  aria-hidden="true"
                />
                {s.name}
              </li>
            ))}
          </ul>
        </figcaption>
      ) : null}
    </figure>
  );
};

/** Compact axis labels: 1234567 → 1.2M. */
export const compact = (v: number): string =>
  Math.abs(v) >= 1e9
    ? `${(v / 1e9).toFixed(1)}B`
    : Math.abs(v) >= 1e6
      ? `${(v / 1e6).toFixed(1)}M`
      : Math.abs(v) >= 1e3
        ? `${(v / 1e3).toFixed(1)}k`
        : String(Math.round(v * 100) / 100);

export const compactUsd = (v: number): string =>
  v !== 0 && Math.abs(v) < 0.01 ? `$${v.toPrecision(2)}` : `$${compact(v)}`;
