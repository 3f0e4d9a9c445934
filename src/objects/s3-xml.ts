/**
 * The few XML documents of the S3 API the object store reads and writes: a ListObjectsV2 page, an
 * initiated or completed multipart upload, an error. S3's answers are flat and machine-written, so
 * each field is read by its tag rather than through a general XML parser.
 */

const ENTITIES: Readonly<Record<string, string>> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

const unescapeXml = (text: string): string =>
  text.replace(/&(#x[0-9A-Fa-f]+|#[0-9]+|amp|lt|gt|quot|apos);/g, (_, entity: string) => {
    if (!entity.startsWith('#')) return ENTITIES[entity]!;
    const hex = entity[1] === 'x';
    return String.fromCodePoint(Number.parseInt(entity.slice(hex ? 2 : 1), hex ? 16 : 10));
  });

export const escapeXml = (text: string): string =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** The text of the first `<name>` element in `xml`, unescaped; undefined when there is none. */
export const xmlField = (xml: string, name: string): string | undefined => {
  const match = new RegExp(`<${name}>([\\s\\S]*?)</${name}>`).exec(xml);
  return match ? unescapeXml(match[1]!) : undefined;
};

export interface ListedObject {
  /** The full bucket key. */
  key: string;
  size: number;
  modifiedAt: Date;
}

export interface ListPage {
  objects: ListedObject[];
  /** Present while more pages follow. */
  nextToken: string | undefined;
}

/**
 * One ListObjectsV2 page. Keys are asked for with `encoding-type=url` (XML 1.0 cannot carry every
 * character a key may hold); a store that honours it says so in `<EncodingType>`, and only then
 * are keys decoded, `+` being a space as in a form.
 */
export const parseListPage = (xml: string): ListPage => {
  const urlEncoded = xmlField(xml, 'EncodingType') === 'url';
  const objects: ListedObject[] = [];
  for (const [, block] of xml.matchAll(/<Contents>([\s\S]*?)<\/Contents>/g)) {
    const raw = xmlField(block!, 'Key');
    if (raw === undefined) continue;
    objects.push({
      key: urlEncoded ? decodeURIComponent(raw.replace(/\+/g, ' ')) : raw,
      size: Number(xmlField(block!, 'Size') ?? Number.NaN),
      modifiedAt: new Date(xmlField(block!, 'LastModified') ?? Number.NaN),
    });
  }
  const truncated = xmlField(xml, 'IsTruncated') === 'true';
  const nextToken = truncated ? xmlField(xml, 'NextContinuationToken') : undefined;
  // A truncated page without a token would end the listing early without a word.
  if (truncated && !nextToken) throw new Error('a truncated listing page carries no continuation token');
  return { objects, nextToken };
};

export const completeUploadXml = (etags: readonly string[]): string =>
  `<CompleteMultipartUpload>${etags
    .map((etag, i) => `<Part><PartNumber>${i + 1}</PartNumber><ETag>${escapeXml(etag)}</ETag></Part>`)
    .join('')}</CompleteMultipartUpload>`;

/** `Code: Message` of an S3 error document, or null when `xml` is not one. */
export const describeS3Error = (xml: string): string | null => {
  if (!/<Error>/.test(xml)) return null;
  const code = xmlField(xml, 'Code') ?? 'unknown error';
  const message = xmlField(xml, 'Message');
  return message ? `${code}: ${message}` : code;
};
