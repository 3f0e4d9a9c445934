/**
 * The first path segments of the query routes (SPEC 4.5), each under /api: what the console's
 * /api/query/** prefix may reach. A test registers the query routes and holds this list to them.
 */
export const QUERY_ROUTE_SEGMENTS: ReadonlySet<string> = new Set([
  'requests',
  'sessions',
  'usage',
  'metrics',
  'reports',
  'exports',
  'body',
  'traces',
]);
