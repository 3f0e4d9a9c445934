import type { DiscoveryReport } from '../../providers/azure/discover.js';

const cell = (value: string | null) => value ?? '-';

/** The terminal rendering of a discovery report: one line per deployment, then what apply does. */
export const formatDiscovery = (r: DiscoveryReport): string => {
  const width = Math.max(10, ...r.deployments.map((d) => d.name.length));
  const lines = [`${r.provider} deployments listed from ${r.listing_url} (${r.surface} surface)`];
  for (const d of r.deployments) {
    const models = d.models.length > 0 ? ` -> ${d.models.join(', ')}` : '';
    lines.push(`  ${d.name.padEnd(width)}  ${cell(d.model).padEnd(24)}  ${d.classification}${models}`);
  }
  const c = r.counts;
  lines.push(
    `${c.listed} listed: ${c.mapped} mapped, ${c.mappable} mappable, ${c.unsupported} unsupported`,
    `${r.applied ? 'applied' : 'apply would make'}: ${c.added} added, ${c.pruned} pruned, ${c.rewritten} rewritten to short names, ${c.kept} kept`,
  );
  for (const p of r.changes.pruned) lines.push(`  pruned ${p.model} (deployment ${p.deployment} is gone)`);
  if (!r.applied && c.added + c.pruned + c.rewritten > 0) lines.push('run again with --apply to store them');
  return lines.join('\n');
};
