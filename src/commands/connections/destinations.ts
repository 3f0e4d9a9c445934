import { refusedHost } from '../../lib/destinations.js';
import { invalid, type Validated, valid } from '../../lib/validated.js';
import { derivedHost } from '../../providers/azure/origin.js';
import type { ValidConnection } from './validation.js';

const HINT =
  'tenant connections reach public hosts only (the operator allows private destinations with SVC_TENANT_PRIVATE_DESTINATIONS=allow)';

const hostOf = (url: string): string => new URL(url).hostname;

/**
 * The hosts a tenant connection would make the gateway dial, each under the field that set it:
 * its base_url, a deployment host's https://{resource}.{domain} and its project endpoint. The
 * managed runtime's derived host is always under the cloud's own domain, so its region is not one.
 */
const tenantHosts = (c: ValidConnection): [field: string, host: string][] => {
  const hosts: [string, string][] = [];
  if (c.baseUrl !== null) hosts.push(['base_url', hostOf(c.baseUrl)]);
  if (c.provider === 'azure' || c.provider === 'azure-gov') {
    const field = c.metadata.domain === undefined ? 'metadata.resource' : 'metadata.domain';
    hosts.push([field, hostOf(derivedHost(c.metadata, c.provider))]);
    if (c.metadata.project_endpoint !== undefined)
      hosts.push(['metadata.project_endpoint', hostOf(c.metadata.project_endpoint)]);
  }
  return hosts;
};

/**
 * SPEC 4.7 accepts loopback HTTP origins for operators and tests; a tenant connection may not name
 * a loopback, private, link-local or metadata host as written (the gateway checks every address a
 * name resolves to again when it dials). Platform keys are the operator's and are not checked.
 */
export const refuseInternalDestinations = (c: ValidConnection): Validated<ValidConnection> => {
  for (const [field, host] of tenantHosts(c)) {
    const why = refusedHost(host);
    if (why !== null) return invalid(field, `must not point at an internal host: ${why}; ${HINT}`);
  }
  return valid(c);
};
