/** The token of an `Authorization: Bearer <token>` header value (RFC 6750), else null. */
export const bearerToken = (authorization: string | undefined): string | null => {
  if (!authorization) return null;
  return /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1] ?? null;
};
