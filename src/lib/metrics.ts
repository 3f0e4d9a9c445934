/**
 * The child series of a metric for these label values, kept after first use: prom-client hashes a
 * label object on every call, several times per request. The label sets are few (routes, statuses,
 * lanes and outcomes), so the map stays small.
 */
const labelled = <C>(
  children: Map<string, C>,
  metric: { labels(...values: string[]): C },
  ...values: string[]
): C => {
  const key = values.join('\u0000');
  let child = children.get(key);
  if (child === undefined) {
    child = metric.labels(...values);
    children.set(key, child);
  }
  return child;
};

/** `labelled` with a cache of its own: the child series of `metric` for label values. */
export const childrenOf = <C>(metric: { labels(...values: string[]): C }): ((...values: string[]) => C) => {
  const children = new Map<string, C>();
  return (...values) => labelled(children, metric, ...values);
};
