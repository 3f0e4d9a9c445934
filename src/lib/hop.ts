import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The mark every upstream call of this deployment carries (SPEC 4.7 outbound calls), so that a
 * request which comes back to any gateway of the same deployment is recognised and refused before
 * it is dispatched again: whoever pointed an upstream at the gateway, one client request makes one
 * more request, not a storm. The value is derived from the deployment's master key, so an upstream
 * that sees it learns nothing of the key, and other deployments' marks are not ours.
 */
export const HOP_HEADER = 'x-svc-hop';

export const hopValue = (masterKey: Buffer): string =>
  createHmac('sha256', masterKey).update('svc upstream hop v1').digest('base64url');

/** True when a request's hop header (one value or several) carries this deployment's mark. */
export const carriesHop = (header: string | string[] | undefined, own: string): boolean => {
  if (header === undefined) return false;
  const expected = Buffer.from(own);
  const values = (Array.isArray(header) ? header : [header]).flatMap((v) => v.split(','));
  return values.some((v) => {
    const got = Buffer.from(v.trim());
    return got.length === expected.length && timingSafeEqual(got, expected);
  });
};
