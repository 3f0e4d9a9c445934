/**
 * What every connection check returns: a value, or the one field at fault and a message that
 * starts with that field's name, so a 400 body tells the caller exactly what to fix.
 * Messages never quote a secret value.
 */
export type Validated<T> = { ok: true; value: T } | { ok: false; field: string; message: string };

export type Invalid = Extract<Validated<unknown>, { ok: false }>;

export const valid = <T>(value: T): Validated<T> => ({ ok: true, value });

export const invalid = (field: string, problem: string): Invalid => ({
  ok: false,
  field,
  message: `${field} ${problem}`,
});
