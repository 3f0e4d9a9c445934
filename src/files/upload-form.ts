import { ServiceError } from '../lib/errors.js';
import {
  EXPIRES_AFTER_MAX_SECONDS,
  EXPIRES_AFTER_MIN_SECONDS,
  isPurpose,
  type Purpose,
  UPLOAD_PURPOSES,
} from './model.js';

/**
 * The text fields of an upload form (`POST /v1/files`, OpenAI's `FileCreateParams`): `purpose`, and
 * `expires_after[anchor]` with `expires_after[seconds]`. Each is checked as it arrives, so a form
 * that names its purpose before its file is refused before any byte is stored; `complete` then
 * says what is missing once the whole form is read.
 */

export interface UploadFields {
  purpose: Purpose;
  /** Seconds after created_at at which the file expires; null: it never does. */
  expiresAfterSeconds: number | null;
}

const invalid = (param: string, message: string) =>
  new ServiceError('invalid_request_error', message, { param });

const shown = (value: string) => JSON.stringify(value.length > 100 ? `${value.slice(0, 100)}...` : value);

export const FILE_FIELD = 'file';

export class UploadForm {
  private purpose: Purpose | undefined;
  private anchor: string | undefined;
  private seconds: number | undefined;
  private readonly seen = new Set<string>();

  /** One text field of the form; throws a 400 naming it when it is unknown, repeated or invalid. */
  take(name: string, value: string): void {
    if (this.seen.has(name)) throw invalid(name, `form field ${shown(name)} is given more than once`);
    this.seen.add(name);
    switch (name) {
      case 'purpose':
        if (!isPurpose(value))
          throw invalid(
            'purpose',
            `purpose must be one of ${UPLOAD_PURPOSES.join(', ')}; got ${shown(value)}`,
          );
        this.purpose = value;
        return;
      case 'expires_after[anchor]':
        if (value !== 'created_at')
          throw invalid(
            'expires_after[anchor]',
            `expires_after[anchor] must be created_at; got ${shown(value)}`,
          );
        this.anchor = value;
        return;
      case 'expires_after[seconds]': {
        const n = /^\d{1,10}$/.test(value) ? Number(value) : Number.NaN;
        if (!(n >= EXPIRES_AFTER_MIN_SECONDS && n <= EXPIRES_AFTER_MAX_SECONDS))
          throw invalid(
            'expires_after[seconds]',
            `expires_after[seconds] must be an integer from ${EXPIRES_AFTER_MIN_SECONDS} (one hour) to ${EXPIRES_AFTER_MAX_SECONDS} (30 days); got ${shown(value)}`,
          );
        this.seconds = n;
        return;
      }
      case FILE_FIELD:
        throw invalid(FILE_FIELD, 'the file field must be a file part (with a filename), not a text field');
      default:
        throw invalid(
          name,
          `unrecognized form field ${shown(name)}: an upload takes file, purpose and optionally expires_after[anchor] with expires_after[seconds]`,
        );
    }
  }

  /** The fields once the whole form is read; a 400 naming what is missing. */
  complete(): UploadFields {
    if (this.purpose === undefined)
      throw invalid('purpose', `missing required parameter purpose (one of ${UPLOAD_PURPOSES.join(', ')})`);
    if ((this.anchor === undefined) !== (this.seconds === undefined))
      throw invalid(
        'expires_after',
        'expires_after needs both expires_after[anchor] (created_at) and expires_after[seconds]',
      );
    return { purpose: this.purpose, expiresAfterSeconds: this.seconds ?? null };
  }
}

/** A filename as stored and shown: present, at most 512 characters, no control characters. */
export const checkFilename = (filename: string): string => {
  if (filename.length === 0)
    throw invalid(
      FILE_FIELD,
      'the file part has an empty filename; name the file in its Content-Disposition',
    );
  if (filename.length > 512)
    throw invalid(FILE_FIELD, `the filename is ${filename.length} characters long; at most 512 are accepted`);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u001f\u007f]/.test(filename))
    throw invalid(FILE_FIELD, 'the filename contains control characters');
  return filename;
};

/** The media type the client gave the file part, kept for later use; a dubious one is dropped. */
export const contentTypeOf = (value: string): string =>
  /^[\w.+-]{1,127}\/[\w.+-]{1,127}$/.test(value) ? value.toLowerCase() : 'application/octet-stream';
